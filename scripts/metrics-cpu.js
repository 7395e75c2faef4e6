#!/usr/bin/env node
/**
 * What watching costs (docs/metrics.md): the lab's CPU time idle, then with N /metrics clients, read
 * from the kernel; then /good's throughput without and with one client, in turn on the same server.
 * Each repeat is a fresh server; with more than one, medians.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { readScriptFlags } from '../lib/measure/args.js'
import { keepFigures, log, measureStart, runScript } from './cli.js'
import { startLabProcess } from '../lib/measure/lab-process.js'
import { openMetricsStream, throughputInTurn, uploadsInTurn } from '../lib/measure/uploads-in-turn.js'
import { procAvailable } from '../lib/util/platform.js'
import { markdownTable, fixed } from '../lib/measure/table.js'
import { median } from '../lib/measure/stats.js'
import { ensureInput } from '../lib/measure/inputs.js'
import { MB, formatBytes, parseByteSize } from '../lib/util/units.js'

const USAGE = `Usage: npm run metrics-cpu -- [options]
  --seconds N    length of each measurement (default 20)
  --clients N    SSE clients in the second measurement (default 1: one dashboard)
  --interval MS  their sampling interval, 10 to 5000 (default 100, the dashboard's)
  --warmup N     seconds to settle before each measurement (default 3)
  --repeat N     measurements, each on a fresh server; the median difference is reported (default 1)
  --size SIZE    inflated size of the body /good's throughput is measured on (default 100MB)
  --uploads N    uploads of it on each server, half with one client watching, in turn (default 6; 0: none)
  --figures NAME also write docs/figures/NAME.json and NAME.md
  -h, --help`

function readOptions (argv) {
  const flags = readScriptFlags(argv, {
    seconds: { type: 'string', default: '20' },
    clients: { type: 'string', default: '1' },
    interval: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '3' },
    repeat: { type: 'string', default: '1' },
    size: { type: 'string', default: '100MB' },
    uploads: { type: 'string', default: '6' }
  })
  if (flags === null) return null
  const { values, integer } = flags
  const uploads = integer('uploads', 0, 100)
  if (uploads % 2 !== 0) throw new TypeError(`--uploads takes an even number (half watched, half not), got ${uploads}`)
  return {
    seconds: integer('seconds', 1, 3600),
    clients: integer('clients', 1, 1000),
    interval: integer('interval', 10, 5000),
    warmup: integer('warmup', 0, 600),
    repeat: integer('repeat', 1, 100),
    bytes: parseByteSize(values.size),
    uploads,
    figures: values.figures
  }
}

/** CPU seconds, wall seconds and percent of a core, as the table shows them. */
function cpuCells (phase) {
  return [fixed(phase.cpuSeconds, 2), fixed(phase.elapsed, 1), fixed(phase.percent, 2)]
}

/** Clock ticks per second, the unit of /proc/<pid>/stat's times. */
function clockTicks () {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
}

/** utime + stime of a process, in clock ticks. */
function readCpuTicks (pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1')
  // the command name may hold spaces and parentheses; the fields after its last ')' do not
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // fields[0] is the state (field 3 of proc(5)); utime and stime are fields 14 and 15
  return Number(fields[11]) + Number(fields[12])
}

async function measureCpu (pid, seconds, ticksPerSecond) {
  const ticks0 = readCpuTicks(pid)
  const t0 = performance.now()
  await delay(seconds * 1000)
  const ticks1 = readCpuTicks(pid)
  const elapsed = (performance.now() - t0) / 1000
  const cpuSeconds = (ticks1 - ticks0) / ticksPerSecond
  return { elapsed, cpuSeconds, percent: 100 * cpuSeconds / elapsed }
}

async function measure (options) {
  if (!procAvailable()) {
    log('metrics-cpu: needs /proc (Linux, outside portable mode): it reads the server\'s CPU time from the kernel (docs/install.md)')
    return 1
  }
  const meta = measureStart()
  const ticksPerSecond = clockTicks()
  const input = options.uploads > 0 ? await ensureInput({ bytes: options.bytes }, log) : null
  const rows = []
  const runs = []
  for (let run = 1; run <= options.repeat; run++) {
    const measured = await measureOnce(options, ticksPerSecond, run, input)
    const { idle, watched, samples, bytes } = measured
    const tag = options.repeat > 1 ? `run ${run}: ` : ''
    const received = [fixed(samples / watched.elapsed, 0), fixed(bytes / watched.elapsed / 1024, 1)]
    rows.push([`${tag}0 clients`, ...cpuCells(idle), '', ''])
    rows.push([`${tag}${options.clients} clients @ ${options.interval} ms`, ...cpuCells(watched), ...received])
    runs.push({ ...measured, difference: watched.percent - idle.percent })
  }
  const differences = runs.map(function difference (r) { return r.difference })
  let markdown = markdownTable(['phase', 'CPU s', 'wall s', 'CPU % of a core', 'samples/s received', 'KiB/s received'], rows) + '\n'
  const each = differences.map(function shown (d) { return fixed(d, 2) }).join(', ')
  const figure = options.repeat > 1 ? `median ${fixed(median(differences), 2)} (runs: ${each})` : each
  markdown += `\nWatching costs ${figure} percentage points of one core ` +
    `(clock ticks of 1/${ticksPerSecond} s: ±${fixed(100 / ticksPerSecond / options.seconds, 2)} points per figure).\n`
  const throughput = input === null ? null : watchedThroughput(runs)
  if (throughput !== null) {
    const perServer = throughput.ratios.map(function shown (r) { return fixed(r, 3) }).join(', ')
    markdown += `\n/good on ${formatBytes(options.bytes)}, ${options.uploads} uploads per server in turn: ` +
      `${fixed(throughput.unwatched / MB, 1)} MB/s unwatched, ` +
      `${fixed(throughput.watched / MB, 1)} MB/s with one client at ${options.interval} ms (medians); ` +
      `watched/unwatched ${fixed(throughput.ratio, 3)} (per server: ${perServer}).\n`
  }
  process.stdout.write(`\n${markdown}`)
  await keepFigures('metrics-cpu', options.figures, {
    title: 'What watching costs: CPU with a dashboard attached, and /good with and without one',
    meta,
    markdown,
    data: {
      options: { ...options, figures: undefined },
      cpu: { medianDifference: median(differences), differences, ticksPerSecond },
      throughput,
      runs
    }
  })
  return 0
}

/** /good's throughput unwatched and watched (the uploads in turn: on is watched), in the figures' words. */
function watchedThroughput (runs) {
  const t = throughputInTurn(runs.map(function uploadsOf (r) { return r.uploads }))
  return { unwatched: t.off, watched: t.on, ratio: t.ratio, ratios: t.ratios }
}

/** One fresh server: idle, then watched by the clients; then /good's uploads. */
async function measureOnce (options, ticksPerSecond, run, input) {
  const lab = await startLabProcess()
  const clients = []
  try {
    const tag = options.repeat > 1 ? `run ${run}/${options.repeat}: ` : ''
    log(`${tag}server pid ${lab.pid} at ${lab.url}; ${options.warmup} s to settle, then ${options.seconds} s idle`)
    await delay(options.warmup * 1000)
    const idle = await measureCpu(lab.pid, options.seconds, ticksPerSecond)

    const url = `${lab.url}/metrics?interval=${options.interval}`
    for (let i = 0; i < options.clients; i++) clients.push(await openMetricsStream(url))
    log(`${options.clients} SSE clients at interval=${options.interval}; ${options.warmup} s to settle, then ${options.seconds} s`)
    await delay(options.warmup * 1000)
    const before = clients.map(function copy (c) { return { ...c.counts } })
    const watched = await measureCpu(lab.pid, options.seconds, ticksPerSecond)
    const samples = clients.reduce(function sum (n, c, k) { return n + c.counts.samples - before[k].samples }, 0)
    const bytes = clients.reduce(function sum (n, c, k) { return n + c.counts.bytes - before[k].bytes }, 0)
    for (const client of clients.splice(0)) client.close()
    if (input !== null) process.stderr.write(`/good on ${formatBytes(options.bytes)}: ${options.uploads} uploads, half watched\n`)
    const uploads = input === null ? [] : await uploadsInTurn(lab.url, input, {
      uploads: options.uploads,
      during: async function watchWhenOn (on) {
        return on ? (await openMetricsStream(`${lab.url}/metrics?interval=${options.interval}`)).close : null
      }
    })
    return { idle, watched, samples, bytes, uploads }
  } finally {
    for (const client of clients) client.close()
    await lab.stop()
  }
}

runScript('metrics-cpu', { usage: USAGE, readOptions, run: measure })
