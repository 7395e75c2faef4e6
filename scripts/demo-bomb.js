#!/usr/bin/env node
/** npm run demo:bomb: one zip bomb, made as it is sent, into /good and then the unguarded /bad (USAGE says what happens). */
import { parseArgs } from 'node:util'
import zlib from 'node:zlib'
import { formatBytes, formatDecimalBytes, formatDuration, formatMiB } from '../lib/util/units.js'
import { createBomb } from '../lib/generate/bombs.js'
import { openEventStream } from '../lib/measure/event-stream.js'
import { uploadStreams } from '../lib/experiments/upload-client.js'
import { isMain, runScript } from './cli.js'
import { BUDGET, restartLine, startLab } from './demo/lab.js'

const USAGE = `Usage: npm run demo:bomb [-- --help]

One zip bomb, two routes, a memory budget. Starts the lab with --unsafe-bad --memory-limit ${BUDGET}
on a free port, streams a 10 GB bomb (made as it is sent, nothing on disk) into POST /good, which
refuses it, then into the unguarded POST /bad, whose worker grows to the budget and is killed on
purpose; then tells what happened from the lab's own figures. It takes a few seconds.

Options:
  -h, --help   this help, and nothing else`
const SMALL = zlib.gzipSync(JSON.stringify({ items: [{ id: 1, numbers: [1.5] }] }))

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

/** MiB, whole. */
function mib (bytes) {
  return formatMiB(bytes, { digits: 0 })
}

async function main () {
  function say (line = '') { process.stdout.write(line + '\n') }
  const lab = await startLab(0)
  try {
    const bomb = createBomb({ variant: 'ratio' })
    const budget = BUDGET.replace('MiB', ' MiB')
    say(`streamlab zip-bomb demo: the lab at ${lab.url}, worker pid ${lab.pid}, memory budget ${budget}, /bad unsafe`)
    const { inflatedBytes, compressedBytes } = bomb
    say(`the bomb: ${formatDecimalBytes(inflatedBytes)} of valid JSON (spaces inside {"items":[ ]}) in ` +
      `${formatDecimalBytes(compressedBytes)} of gzip, ${Math.round(inflatedBytes / compressedBytes)}:1, made as it is sent`)
    say()

    // /good: counts what it inflates and refuses early
    const idle = await snapshot(lab.url)
    const good = await uploadStreams(`${lab.url}/good`, bomb.streams, bomb.uploadHeaders)
    const after = await snapshot(lab.url)
    const error = good.body?.error
    const reached = inflatedReached(error)
    const inflated = reached === null ? '?' : formatDecimalBytes(reached)
    say(`/good answered ${good.status} ${error?.type ?? ''} after ${inflated} inflated in ${Math.round(good.ms)} ms, ` +
      `peak +${mib(Math.max(0, after.peakRss - idle.rss))} (RSS ${mib(idle.rss)} idle, kernel peak ${mib(after.peakRss)})`)

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
      say(`/bad answered ${bad.status} ${bad.body?.error?.type ?? ''} in ${Math.round(bad.ms)} ms: ` +
        'it was not killed (is the budget above what it holds?)')
      return 1
    }
    say(`/bad (unsafe) climbed to the budget and was killed: RSS ${mib(lowest)} -> ${mib(highest)} in its last sample, ` +
      `then the client's connection was cut, ${formatDuration(bad.ms)} after the upload began (${bad.error})`)
    const line = await restartLine(lab, worker)
    if (line) say(`  supervisor: ${line.said}`)

    // back: the same port, a new worker, and the crash event for dashboards that reconnect
    await watcher.ended
    const reconnected = await openEventStream(`${lab.url}/metrics?interval=1000`, { lastEventId: watcher.lastId() })
    const crash = await reconnected.waitFor(function isCrash (e) { return e.event === 'crash' }, 5000).catch(function none () {
      return null
    })
    reconnected.close()
    const answer = await fetch(`${lab.url}/good`, { method: 'POST', headers: { 'content-type': 'application/gzip' }, body: SMALL })
    const summary = (await answer.json()).summary
    say(`the worker was back in ${line ? line.ms : crash?.data.restartMs} ms (pid ${worker} -> ${lab.pid}); ` +
      `/good answered ${answer.status} to a normal body (${summary?.items} item)`)
    if (crash) {
      const { reason, route, rss, restartMs } = crash.data
      say(`  a dashboard reconnecting with Last-Event-ID ${watcher.lastId()} got event: crash ` +
        `{ reason: ${reason}, route: ${route}, rss: ${formatBytes(rss)}, restartMs: ${restartMs} }`)
    }
    return 0
  } finally {
    await lab.stop()
  }
}

function readArgs (argv) {
  return parseArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' } } }).values.help ? null : {}
}

if (isMain(import.meta.url)) runScript('demo:bomb', { usage: USAGE, readOptions: readArgs, run: main })
