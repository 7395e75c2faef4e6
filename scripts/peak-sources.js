#!/usr/bin/env node
/**
 * How close the sampled peak comes to the kernel's (docs/metrics.md): one upload to a fresh lab in
 * portable mode, warmed up with a 10 kB body (after a large one the process keeps what it freed),
 * its sampled peak (as macOS and Windows get it) beside the kernel's VmHWM of the same process,
 * both reset after the warm-up. Linux only.
 */
import { parseArgs } from 'node:util'
import { startLabProcess } from '../lib/measure/lab-process.js'
import { ensureInput } from '../lib/measure/inputs.js'
import { uploadFile } from '../lib/experiments/upload-client.js'
import { readProcMemory, resetProcPeak } from '../lib/metrics/proc-memory.js'
import { askLab } from '../lib/measure/lab-memory.js'
import { markdownTable } from '../lib/measure/table.js'
import { median } from '../lib/measure/stats.js'
import { procAvailable } from '../lib/util/platform.js'
import { formatBytes, formatMiB, parseByteSize } from '../lib/util/units.js'
import { list } from '../lib/measure/args.js'
import { runScript } from './cli.js'

const USAGE = `Usage: npm run peaks -- [options]
  --sizes LIST    inflated body sizes (default 10MB,100MB)
  --routes LIST   of bad, good (default both)
  --repeat N      measurements per cell, a fresh lab each; medians (default 3)
  -h, --help
Linux only: it reads the kernel's peak (VmHWM) beside the lab's sampled one.`

function readOptions (argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      sizes: { type: 'string', default: '10MB,100MB' },
      routes: { type: 'string', default: 'bad,good' },
      repeat: { type: 'string', default: '3' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return null
  const sizes = list(values.sizes, function size (text) {
    const bytes = parseByteSize(text)
    if (!Number.isSafeInteger(bytes) || bytes < 1) throw new TypeError(`--sizes: ${text} is not a size`)
    return bytes
  })
  const routes = list(values.routes, function route (r) {
    if (!['bad', 'good'].includes(r)) throw new TypeError(`--routes: ${r} is not bad or good`)
    return r
  })
  const repeat = Number(values.repeat)
  if (!Number.isSafeInteger(repeat) || repeat < 1 || repeat > 20) throw new TypeError('--repeat must be 1 to 20')
  if (!procAvailable()) throw new TypeError('it compares with the kernel\'s peak, which needs Linux\'s /proc (not STREAMLAB_PORTABLE)')
  return { sizes, routes, repeat }
}

/** One upload on a fresh portable lab: both peaks above the idle RSS. */
async function measureOnce (route, file, warmUpFile) {
  const lab = await startLabProcess(['--no-request-peak'], { env: { ...process.env, STREAMLAB_PORTABLE: '1' } })
  try {
    await uploadFile(`${lab.url}/${route}`, warmUpFile) // warm-up: code, threads
    const pid = lab.pid
    const idle = readProcMemory(pid).rss
    const kernelReset = resetProcPeak(pid)
    const sampledReset = await askLab(lab.url, '/metrics/peak/reset', 'POST')
    if (!kernelReset || !sampledReset.reset) throw new Error('could not reset both peaks')
    const answer = await uploadFile(`${lab.url}/${route}`, file)
    if (answer.status !== 200) throw new Error(`${route} answered ${answer.status}`)
    const kernel = readProcMemory(pid).peak
    const sample = (await askLab(lab.url, '/metrics?format=json')).sample
    if (sample.peakSource !== 'sampled') throw new Error(`the lab's peak is ${sample.peakSource}, not sampled`)
    return { kernel: kernel - idle, sampled: sample.peakRss - idle }
  } finally {
    await lab.stop()
  }
}

async function main ({ sizes, routes, repeat }) {
  const rows = []
  const { file: warmUpFile } = await ensureInput({ bytes: 10_000 })
  for (const bytes of sizes) {
    const { file } = await ensureInput({ bytes }, function say (line) { process.stderr.write(`${line}\n`) })
    for (const route of routes) {
      const runs = []
      for (let i = 1; i <= repeat; i++) {
        process.stderr.write(`/${route} ${formatBytes(bytes)} run ${i}/${repeat}\n`)
        runs.push(await measureOnce(route, file, warmUpFile))
      }
      const kernel = median(runs.map(function k (r) { return r.kernel }))
      const sampled = median(runs.map(function s (r) { return r.sampled }))
      const ratios = runs.map(function ratio (r) { return r.sampled / r.kernel })
      rows.push([`/${route}`, formatBytes(bytes), formatMiB(kernel), formatMiB(sampled),
        `${(100 * median(ratios)).toFixed(1)} %`,
        ratios.map(function pct (r) { return `${(100 * r).toFixed(1)} %` }).join(', ')])
    }
  }
  process.stdout.write('\nPeak above idle for one upload, kernel (VmHWM) vs sampled (every 5 ms), ' +
    `the same request; medians of ${repeat}\n\n`)
  process.stdout.write(markdownTable(['route', 'body', 'kernel peak', 'sampled peak', 'sampled / kernel', 'runs'], rows) + '\n')
  return 0
}

runScript('peaks', { usage: USAGE, readOptions, run: main })
