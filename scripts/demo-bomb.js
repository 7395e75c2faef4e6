#!/usr/bin/env node
/**
 * npm run demo:bomb: one zip bomb, two routes, a memory budget. Starts the
 * lab (the supervisor) with `--unsafe-bad --memory-limit 512MiB` on a free
 * port, streams a 10 GB bomb into POST /good, then into the unguarded
 * POST /bad, and tells what happened with the figures the lab gave: the
 * answers, the /metrics JSON snapshot and stream, and the supervisor's output.
 * The bomb is made as it is sent: nothing of it touches the disk.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import zlib from 'node:zlib'
import { formatBytes, formatDecimalBytes, formatDuration, formatMiB } from '../lib/util/units.js'
import { createBomb } from '../lib/generate/bombs.js'
import { openEventStream } from '../lib/measure/event-stream.js'
import { startLabProcess } from '../lib/measure/lab-process.js'
import { uploadStreams } from '../lib/experiments/upload-client.js'

const BUDGET = '512MiB'

const USAGE = `Usage: npm run demo:bomb [-- --help]

One zip bomb, two routes, a memory budget. Starts the lab with --unsafe-bad --memory-limit ${BUDGET}
on a free port, streams a 10 GB bomb (made as it is sent, nothing on disk) into POST /good, which
refuses it, then into the unguarded POST /bad, whose worker grows to the budget and is killed on
purpose; then tells what happened from the lab's own figures. It takes a few seconds.

Options:
  -h, --help   this help, and nothing else`
const SMALL_BODY = zlib.gzipSync(JSON.stringify({ items: [{ id: 1, numbers: [1.5] }] }))

async function snapshot (url) {
  const res = await fetch(`${url}/metrics?format=json`, { headers: { accept: 'application/json' } })
  return (await res.json()).sample
}

/** How far /good let the body get, from the refusal's own figures. */
function inflatedReached (error) {
  if (Number.isFinite(error?.inflatedBytes)) return error.inflatedBytes
  if (error?.type === 'inflated.too.large' && Number.isFinite(error.received)) return error.received
  return error?.offset ?? null
}

async function waitForLine (lab, pattern, timeoutMs) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const match = pattern.exec(lab.output())
    if (match) return match
    if (Date.now() > deadline) return null
    await new Promise(function pause (resolve) { setTimeout(resolve, 25) })
  }
}

/**
 * Run the demonstration.
 * @param {{ write: (text: string) => void }} [out]
 */
async function main (out = process.stdout) {
  function say (line = '') { out.write(line + '\n') }
  const lab = await startLabProcess(['--unsafe-bad', '--memory-limit', BUDGET])
  try {
    const bomb = createBomb({ variant: 'ratio' })
    say(`streamlab zip-bomb demo: the lab at ${lab.url}, worker pid ${lab.pid}, memory budget ${BUDGET.replace('MiB', ' MiB')}, /bad unsafe`)
    say(`the bomb: ${formatDecimalBytes(bomb.inflatedBytes)} of valid JSON (spaces inside {"items":[ ]}) in ${formatDecimalBytes(bomb.compressedBytes)} of gzip, ` +
      `${Math.round(bomb.inflatedBytes / bomb.compressedBytes)}:1, made as it is sent`)
    say()

    // /good: counts what it inflates and refuses early
    const idle = await snapshot(lab.url)
    const good = await uploadStreams(`${lab.url}/good`, bomb.streams, bomb.uploadHeaders)
    const after = await snapshot(lab.url)
    const error = good.body?.error
    const reached = inflatedReached(error)
    say(`/good answered ${good.status} ${error?.type ?? ''} after ${reached === null ? '?' : formatDecimalBytes(reached)} inflated in ${Math.round(good.ms)} ms, ` +
      `peak +${formatMiB(Math.max(0, after.peakRss - idle.rss), { digits: 0 })} (RSS ${formatMiB(idle.rss, { digits: 0 })} idle, kernel peak ${formatMiB(after.peakRss, { digits: 0 })})`)

    // /bad without its guard: watch its memory climb until the supervisor kills it
    const watcher = await openEventStream(`${lab.url}/metrics?interval=50`)
    await watcher.waitFor(function isSample (e) { return e.event === 'sample' })
    const worker = lab.pid
    const second = createBomb({ variant: 'ratio' })
    const bad = await uploadStreams(`${lab.url}/bad`, second.streams, second.uploadHeaders)
    const samples = watcher.events.filter(function isSample (e) { return e.event === 'sample' })
    const highest = samples.reduce(function max (top, e) { return Math.max(top, e.data.rss) }, 0)
    const lowest = samples.reduce(function min (low, e) { return Math.min(low, e.data.rss) }, Infinity)
    if (bad.status !== 0) {
      say(`/bad answered ${bad.status} ${bad.body?.error?.type ?? ''} in ${Math.round(bad.ms)} ms: it was not killed (is the budget above what it holds?)`)
      return 1
    }
    say(`/bad (unsafe) climbed to the budget and was killed: RSS ${formatMiB(lowest, { digits: 0 })} -> ${formatMiB(highest, { digits: 0 })} in its last sample, ` +
      `then the client's connection was cut, ${formatDuration(bad.ms)} after the upload began (${bad.error})`)
    const line = await waitForLine(lab, /streamlab: (worker \d+ killed: .*?); restarted in (\d+) ms \(worker pid (\d+)\)/, 5000)
    if (line) say(`  supervisor: ${line[1]}`)

    // back: the same port, a new worker, and the crash event for dashboards that reconnect
    await watcher.ended
    const reconnected = await openEventStream(`${lab.url}/metrics?interval=1000`, { lastEventId: watcher.lastId() })
    const crash = await reconnected.waitFor(function isCrash (e) { return e.event === 'crash' }, 5000).catch(function none () { return null })
    reconnected.close()
    const answer = await fetch(`${lab.url}/good`, { method: 'POST', headers: { 'content-type': 'application/gzip' }, body: SMALL_BODY })
    const summary = (await answer.json()).summary
    say(`the worker was back in ${line ? line[2] : crash?.data.restartMs} ms (pid ${worker} -> ${lab.pid}); ` +
      `/good answered ${answer.status} to a normal body (${summary?.items} item)`)
    if (crash) {
      say(`  a dashboard reconnecting with Last-Event-ID ${watcher.lastId()} got event: crash ` +
        `{ reason: ${crash.data.reason}, route: ${crash.data.route}, rss: ${formatBytes(crash.data.rss)}, restartMs: ${crash.data.restartMs} }`)
    }
    return 0
  } finally {
    await lab.stop()
  }
}

/** The flags: --help alone; anything else is refused before the lab starts. */
function readArgs (argv) {
  try {
    return parseArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' } }, strict: true }).values
  } catch (err) {
    return { error: err.message }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = readArgs(process.argv.slice(2))
  if (args.help || args.error) {
    if (args.error) console.error(`demo:bomb: ${args.error}\n`)
    console.log(USAGE)
    process.exit(args.error ? 2 : 0)
  }
  main().then(function setExitCode (code) {
    process.exitCode = code
  }, function failed (err) {
    console.error(`demo:bomb: ${err.stack ?? err.message}`)
    process.exitCode = 1
  })
}
