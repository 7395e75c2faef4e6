#!/usr/bin/env node
/**
 * What watching costs: the lab server's CPU time with no /metrics clients,
 * then with N SSE clients, read from the kernel (/proc/<pid>/stat, utime +
 * stime, all threads) so the bench's own work is never counted.
 *
 *   node scripts/metrics-cpu.js [--seconds 20] [--clients 5] [--interval 100] [--repeat 3]
 *
 * Each repeat is a fresh server: both phases, then the difference; with more than one, the median.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { runCommand } from '../lib/measure/args.js'
import { startLabProcess } from '../lib/measure/lab-process.js'
import { procAvailable } from '../lib/util/platform.js'
import { markdownTable, fixed } from '../lib/measure/table.js'
import { median } from '../lib/measure/stats.js'

const USAGE = `Usage: node scripts/metrics-cpu.js [options]
  --seconds N    length of each measurement (default 20)
  --clients N    SSE clients in the second measurement (default 5)
  --interval MS  their sampling interval, 10 to 5000 (default 100)
  --warmup N     seconds to settle before each measurement (default 3)
  --repeat N     measurements, each on a fresh server; the median difference is reported (default 1)
  -h, --help`


function readOptions (argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string', default: '20' },
      clients: { type: 'string', default: '5' },
      interval: { type: 'string', default: '100' },
      warmup: { type: 'string', default: '3' },
      repeat: { type: 'string', default: '1' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return null
  function integer (name, min, max) {
    const n = Number(values[name])
    if (!Number.isInteger(n) || n < min || n > max) throw new TypeError(`--${name} takes an integer from ${min} to ${max}, got "${values[name]}"`)
    return n
  }
  return {
    seconds: integer('seconds', 1, 3600),
    clients: integer('clients', 1, 1000),
    interval: integer('interval', 10, 5000),
    warmup: integer('warmup', 0, 600),
    repeat: integer('repeat', 1, 100)
  }
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

/** An SSE client that reads everything and counts what it got. */
function openClient (url) {
  return new Promise(function connect (resolve, reject) {
    const counts = { bytes: 0, samples: 0 }
    const req = http.get(url, { headers: { accept: 'text/event-stream' } }, function onResponse (res) {
      if (res.statusCode !== 200) {
        res.resume()
        reject(new Error(`GET ${url} answered ${res.statusCode}`))
        return
      }
      res.setEncoding('utf8')
      res.on('data', function count (chunk) {
        counts.bytes += chunk.length
        counts.samples += chunk.split('event: sample\n').length - 1
      })
      res.on('error', function ignoreAfterClose () {})
      resolve({ counts, close: function closeClient () { req.destroy() } })
    })
    req.on('error', reject)
  })
}

async function measure (options) {
  if (!procAvailable()) {
    process.stderr.write('metrics-cpu: needs /proc (Linux, outside portable mode): it reads the server\'s CPU time from the kernel (docs/install.md)\n')
    return 1
  }
  const ticksPerSecond = clockTicks()
  const rows = []
  const differences = []
  for (let run = 1; run <= options.repeat; run++) {
    const { idle, watched, samples, bytes } = await measureOnce(options, ticksPerSecond, run)
    const tag = options.repeat > 1 ? `run ${run}: ` : ''
    rows.push(
      [`${tag}0 clients`, fixed(idle.cpuSeconds, 2), fixed(idle.elapsed, 1), fixed(idle.percent, 2), '', ''],
      [`${tag}${options.clients} clients @ ${options.interval} ms`, fixed(watched.cpuSeconds, 2), fixed(watched.elapsed, 1), fixed(watched.percent, 2),
        fixed(samples / watched.elapsed, 0), fixed(bytes / watched.elapsed / 1024, 1)]
    )
    differences.push(watched.percent - idle.percent)
  }
  process.stdout.write('\n' + markdownTable(['phase', 'CPU s', 'wall s', 'CPU % of a core', 'samples/s received', 'KiB/s received'], rows) + '\n')
  const each = differences.map(function shown (d) { return fixed(d, 2) }).join(', ')
  const figure = options.repeat > 1 ? `median ${fixed(median(differences), 2)} (runs: ${each})` : each
  process.stdout.write(`\ndifference: ${figure} percentage points of one core ` +
    `(clock ticks of 1/${ticksPerSecond} s: ±${fixed(100 / ticksPerSecond / options.seconds, 2)} points per figure)\n`)
  return 0
}

/** One fresh server: idle, then watched by the clients. */
async function measureOnce (options, ticksPerSecond, run) {
  const lab = await startLabProcess()
  const clients = []
  try {
    process.stderr.write(`${options.repeat > 1 ? `run ${run}/${options.repeat}: ` : ''}server pid ${lab.pid} at ${lab.url}; ${options.warmup} s to settle, then ${options.seconds} s idle\n`)
    await delay(options.warmup * 1000)
    const idle = await measureCpu(lab.pid, options.seconds, ticksPerSecond)

    const url = `${lab.url}/metrics?interval=${options.interval}`
    for (let i = 0; i < options.clients; i++) clients.push(await openClient(url))
    process.stderr.write(`${options.clients} SSE clients at interval=${options.interval}; ${options.warmup} s to settle, then ${options.seconds} s\n`)
    await delay(options.warmup * 1000)
    const before = clients.map(function copy (c) { return { ...c.counts } })
    const watched = await measureCpu(lab.pid, options.seconds, ticksPerSecond)
    const samples = clients.reduce(function sum (n, c, k) { return n + c.counts.samples - before[k].samples }, 0)
    const bytes = clients.reduce(function sum (n, c, k) { return n + c.counts.bytes - before[k].bytes }, 0)
    return { idle, watched, samples, bytes }
  } finally {
    for (const client of clients) client.close()
    await lab.stop()
  }
}

runCommand(process.argv.slice(2), { usage: USAGE, readOptions, run: measure }).then(function exit (code) { process.exitCode = code }, function crash (err) {
  console.error(err)
  process.exitCode = 1
})
