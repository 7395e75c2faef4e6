#!/usr/bin/env node
/**
 * What sampling allocation sites costs /good: one body uploaded in turn with the sites sampled
 * and not, on the same fresh server, a stream open throughout (at 1 s, asking for the sites or
 * not), so that the sampling is the only difference (docs/metrics.md, "Allocation sites").
 *
 *   npm run alloc-sites-cost -- [--size 100MB] [--uploads 6] [--repeat 3] [--figures NAME]
 *
 * Order per server: off, on, on, off, ... after one upload not counted, so a drift in the machine
 * falls on both; with several servers, the medians over all and the ratio per server.
 */
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import { parseArgs } from 'node:util'
import { runCommand } from '../lib/measure/args.js'
import { startLabProcess } from '../lib/measure/lab-process.js'
import { postBody } from '../lib/measure/post-body.js'
import { markdownTable, fixed } from '../lib/measure/table.js'
import { median } from '../lib/measure/stats.js'
import { ensureInput } from '../lib/measure/inputs.js'
import { checkFiguresName, writeFigures, figuresCommand } from '../lib/measure/figures.js'
import { parseByteSize, formatBytes } from '../lib/util/units.js'

const USAGE = `Usage: npm run alloc-sites-cost -- [options]
  --size SIZE    inflated size of the body uploaded to /good (default 100MB)
  --uploads N    uploads on each server, half with the sites sampled, in turn (default 6)
  --repeat N     fresh servers (default 3)
  --figures NAME also write docs/figures/NAME.json and NAME.md
  -h, --help`

const MB = 1e6

function readOptions (argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      size: { type: 'string', default: '100MB' },
      uploads: { type: 'string', default: '6' },
      repeat: { type: 'string', default: '3' },
      figures: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return null
  function integer (name, min, max) {
    const n = Number(values[name])
    if (!Number.isInteger(n) || n < min || n > max) throw new TypeError(`--${name} takes an integer from ${min} to ${max}, got "${values[name]}"`)
    return n
  }
  checkFiguresName(values.figures)
  const uploads = integer('uploads', 2, 100)
  if (uploads % 2 !== 0) throw new TypeError(`--uploads takes an even number (half sampled, half not), got ${uploads}`)
  return { bytes: parseByteSize(values.size), uploads, repeat: integer('repeat', 1, 20), figures: values.figures }
}

/** A stream at 1 s that reads everything; `sites` asks for the allocation sites while it is open. */
function openStream (url, sites) {
  return new Promise(function connect (resolve, reject) {
    const req = http.get(`${url}/metrics?interval=1000${sites ? '&allocationSites=1' : ''}`, { headers: { accept: 'text/event-stream' } }, function onResponse (res) {
      if (res.statusCode !== 200) {
        res.resume()
        reject(new Error(`GET /metrics answered ${res.statusCode}`))
        return
      }
      res.resume()
      res.on('error', function ignoreAfterClose () {})
      resolve(function closeStream () { req.destroy() })
    })
    req.on('error', reject)
  })
}

async function uploadOnce (url, input) {
  const headers = { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': input.compressedBytes }
  const { status, text, ms } = await postBody(`${url}/good`, [fs.createReadStream(input.file)], headers)
  if (status !== 200) throw new Error(`POST /good answered ${status}: ${text.slice(0, 200)}`)
  return { ms, inflatedBytes: JSON.parse(text).summary.inflatedBytes }
}

/** One fresh server: an upload not counted, then the uploads in turn, off, on, on, off, ... */
async function measureServer (input, options) {
  const lab = await startLabProcess()
  try {
    await uploadOnce(lab.url, input)
    const uploads = []
    for (let k = 0; k < options.uploads; k++) {
      const sampled = [1, 2].includes(k % 4)
      const close = await openStream(lab.url, sampled)
      try {
        uploads.push({ sampled, ...await uploadOnce(lab.url, input) })
      } finally {
        close()
      }
    }
    return uploads
  } finally {
    await lab.stop()
  }
}

function rateOf (upload) {
  return upload.inflatedBytes / (upload.ms / 1000)
}

function ratesOf (uploads, sampled) {
  return uploads.filter(function same (u) { return u.sampled === sampled }).map(rateOf)
}

async function measure (options) {
  const started = new Date().toISOString()
  const loadBefore = os.loadavg()[0]
  const input = await ensureInput({ bytes: options.bytes }, function log (line) { process.stderr.write(`${line}\n`) })
  const servers = []
  for (let run = 1; run <= options.repeat; run++) {
    process.stderr.write(`server ${run}/${options.repeat}: /good on ${formatBytes(options.bytes)}, ${options.uploads} uploads, half sampled\n`)
    servers.push(await measureServer(input, options))
  }
  const all = servers.flat()
  const off = median(ratesOf(all, false))
  const on = median(ratesOf(all, true))
  const ratios = servers.map(function perServer (uploads) { return median(ratesOf(uploads, true)) / median(ratesOf(uploads, false)) })
  const throughput = { off, on, ratio: on / off, ratios }
  const rows = servers.map(function row (uploads, k) {
    return [`server ${k + 1}`, fixed(median(ratesOf(uploads, false)) / MB, 1), fixed(median(ratesOf(uploads, true)) / MB, 1), fixed(ratios[k], 3)]
  })
  let markdown = markdownTable(['server', 'MB/s not sampled', 'MB/s sampled', 'sampled/not'], rows) + '\n'
  markdown += `\n/good on ${formatBytes(options.bytes)}: ${fixed(off / MB, 1)} MB/s without allocation sites, ${fixed(on / MB, 1)} MB/s with them ` +
    `(medians); sampled/not ${fixed(throughput.ratio, 3)}; load average ${fixed(loadBefore, 2)} before, ${fixed(os.loadavg()[0], 2)} after.\n`
  process.stdout.write(`\n${markdown}`)
  if (options.figures !== undefined) {
    const files = await writeFigures(options.figures, {
      title: 'What sampling allocation sites costs /good: throughput with the sites sampled and not',
      command: figuresCommand('alloc-sites-cost', process.argv.slice(2)),
      meta: { started, loadBefore },
      markdown,
      data: { options: { ...options, figures: undefined }, throughput, servers }
    })
    process.stderr.write(`wrote ${files.join(', ')}\n`)
  }
  return 0
}

runCommand(process.argv.slice(2), { usage: USAGE, readOptions, run: measure }).then(function exit (code) { process.exitCode = code }, function crash (err) {
  console.error(err)
  process.exitCode = 1
})
