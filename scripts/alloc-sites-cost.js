#!/usr/bin/env node
/**
 * What sampling allocation sites costs /good (docs/metrics.md, "Allocation sites"): one body uploaded
 * in turn with the sites sampled and not (off, on, on, off, …), a stream open throughout, on fresh servers.
 */
import os from 'node:os'
import { readScriptFlags } from '../lib/measure/args.js'
import { keepFigures, log, measureStart, runScript } from './cli.js'
import { startLabProcess } from '../lib/measure/lab-process.js'
import { openMetricsStream, rateOf, throughputInTurn, uploadsInTurn } from '../lib/measure/uploads-in-turn.js'
import { markdownTable, fixed } from '../lib/measure/table.js'
import { median } from '../lib/measure/stats.js'
import { ensureInput } from '../lib/measure/inputs.js'
import { MB, formatBytes, parseByteSize } from '../lib/util/units.js'

const USAGE = `Usage: npm run alloc-sites-cost -- [options]
  --size SIZE    inflated size of the body uploaded to /good (default 100MB)
  --uploads N    uploads on each server, half with the sites sampled, in turn (default 6)
  --repeat N     fresh servers (default 3)
  --figures NAME also write docs/figures/NAME.json and NAME.md
  -h, --help`

function readOptions (argv) {
  const flags = readScriptFlags(argv, {
    size: { type: 'string', default: '100MB' },
    uploads: { type: 'string', default: '6' },
    repeat: { type: 'string', default: '3' }
  })
  if (flags === null) return null
  const { values, integer } = flags
  const uploads = integer('uploads', 2, 100)
  if (uploads % 2 !== 0) throw new TypeError(`--uploads takes an even number (half sampled, half not), got ${uploads}`)
  return { bytes: parseByteSize(values.size), uploads, repeat: integer('repeat', 1, 20), figures: values.figures }
}

/** One fresh server: the uploads in turn, each under a stream at 1 s that asks for the sites on the sampled ones. */
async function measureServer (input, options) {
  const lab = await startLabProcess()
  try {
    return await uploadsInTurn(lab.url, input, {
      uploads: options.uploads,
      during: async function streamAsking (on) {
        return (await openMetricsStream(`${lab.url}/metrics?interval=1000${on ? '&allocationSites=1' : ''}`)).close
      }
    })
  } finally {
    await lab.stop()
  }
}

function medianRate (uploads, on) {
  return median(uploads.filter(function same (u) { return u.on === on }).map(rateOf))
}

async function measure (options) {
  const meta = measureStart()
  const input = await ensureInput({ bytes: options.bytes }, log)
  const servers = []
  for (let run = 1; run <= options.repeat; run++) {
    log(`server ${run}/${options.repeat}: /good on ${formatBytes(options.bytes)}, ${options.uploads} uploads, half sampled`)
    servers.push(await measureServer(input, options))
  }
  const throughput = throughputInTurn(servers)
  const { off, on, ratios } = throughput
  const rows = servers.map(function row (uploads, k) {
    return [`server ${k + 1}`, fixed(medianRate(uploads, false) / MB, 1), fixed(medianRate(uploads, true) / MB, 1), fixed(ratios[k], 3)]
  })
  let markdown = markdownTable(['server', 'MB/s not sampled', 'MB/s sampled', 'sampled/not'], rows) + '\n'
  markdown += `\n/good on ${formatBytes(options.bytes)}: ${fixed(off / MB, 1)} MB/s without allocation sites, ` +
    `${fixed(on / MB, 1)} MB/s with them (medians); sampled/not ${fixed(throughput.ratio, 3)}; ` +
    `load average ${fixed(meta.loadBefore, 2)} before, ${fixed(os.loadavg()[0], 2)} after.\n`
  process.stdout.write(`\n${markdown}`)
  await keepFigures('alloc-sites-cost', options.figures, {
    title: 'What sampling allocation sites costs /good: throughput with the sites sampled and not',
    meta,
    markdown,
    data: { options: { ...options, figures: undefined }, throughput, servers }
  })
  return 0
}

runScript('alloc-sites-cost', { usage: USAGE, readOptions, run: measure })
