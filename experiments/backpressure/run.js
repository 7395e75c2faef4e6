/**
 * The backpressure experiment's run, in the lab's process: the input, a client
 * process that uploads it (./client.js), and every SAMPLE_MS a look at the
 * upload's state on the server (GET /backpressure/:token: its streams and the
 * kernel's queues) beside the client's last report, sent as the run's progress
 * (`pipeline`, docs/backpressure.md). A change of the live params reaches the
 * upload (PATCH /backpressure/:token) and the client (IPC) at once, and each
 * sample puts right whatever did not arrive yet.
 */
import fs from 'node:fs'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { performance } from 'node:perf_hooks'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { runChildJob } from '../../lib/experiments/load.js'
import { runKeyHeaders } from '../../lib/limits/run-keys.js'
import { ensureInput } from '../../lib/measure/inputs.js'
import { composeSample } from '../../lib/experiments/pipeline-sample.js'
import { summariseRun } from './result.js'

const CLIENT_PROCESS = path.join(PROJECT_ROOT, 'experiments', 'backpressure', 'client.js')
/** How often the pipeline is looked at while it runs. */
export const SAMPLE_MS = 250
/** How long the run waits for the upload to end on the server once the client is done. */
const FINAL_WAIT_MS = 10_000
const REQUEST_TIMEOUT_MS = 5000

/**
 * Run it.
 * @param {{ params: object, signal: AbortSignal, baseUrl: string, options: object, progress: Function,
 *   measure: Function, trackProcess: Function, onParams: Function }} ctx
 */
export async function run (ctx) {
  const { signal, options, baseUrl } = ctx
  const first = ctx.params
  ctx.progress({ done: 0, total: 0, stage: 'input' })
  const input = await ensureInput({ bytes: first.bytes, format: 'ndjson', dir: path.join(options.dataDir, 'bench'), signal })
  const inflatedBytes = await inflatedSize(input.file, first.bytes)
  const uploadUrl = `${baseUrl}/backpressure/${randomUUID()}`
  const query = new URLSearchParams({ mode: first.mode, delayMs: first.delayMs, highWaterMark: first.highWaterMark, cap: first.cap })
  let child = null
  let clientState = null
  let lastServer = null
  const relay = { changes: 0, failures: 0 }

  /** Bring the upload and the client to the run's params, where they differ. */
  function reconcile () {
    const p = ctx.params
    const live = lastServer !== null && lastServer.outcome === null
    if (live && (lastServer.settings.mode !== p.mode || lastServer.settings.delayMs !== p.delayMs)) {
      patchUpload(uploadUrl, { mode: p.mode, delayMs: p.delayMs }, signal).then(function applied (state) {
        if (state !== null) lastServer = state
      }, function notApplied () { relay.failures++ })
    }
    if (child?.connected && (clientState === null || clientState.rate !== p.rate)) child.send({ type: 'settings', rate: p.rate })
  }
  const stopListening = ctx.onParams(function relayChange () {
    relay.changes++
    reconcile()
  })

  ctx.progress({ done: 0, total: inflatedBytes, stage: 'upload' })
  const closeWindow = ctx.measure()
  const idleRss = process.memoryUsage.rss()
  let over = false
  const clientJob = { url: `${uploadUrl}?${query}`, file: input.file, rate: first.rate, seconds: first.seconds, sampleMs: SAMPLE_MS }
  const job = runChildJob(CLIENT_PROCESS, clientJob, {
    signal,
    onSpawn: function keepClient (spawned) {
      ctx.trackProcess(spawned)
      child = spawned
    },
    onProgress: function keepClientState (state) { clientState = state }
  })
  const ended = job.finally(function clientDone () { over = true })
  ended.catch(function awaitedBelow () {})
  const samples = []
  let final = null
  try {
    let previous = null
    while (!over) {
      await Promise.race([sleep(SAMPLE_MS, null, { signal }), ended.catch(function noMatter () {})])
      if (over) break
      const server = await readUpload(uploadUrl, signal)
      // not there yet: the client is still connecting
      if (server === null) continue
      lastServer = server
      reconcile()
      const sample = composeSample(server, clientState, ctx.params, previous)
      samples.push(sample)
      previous = sample
      const done = Math.min(server.consumer.consumedBytes, inflatedBytes)
      ctx.progress({ done, total: inflatedBytes, stage: 'upload', pipeline: sample })
    }
    const client = await job
    // past the time box the client reset its connection, which a server that is not reading does not see
    if (client.stoppedBy !== 'answer') await stopUpload(uploadUrl)
    final = await finalState(uploadUrl, signal)
    const server = closeWindow()
    // the upload's end as the last sample: its peaks are the result's, which the views then show
    const last = final === null ? null : composeSample(final, clientState, ctx.params, samples.at(-1) ?? null)
    if (last !== null) samples.push(last)
    const done = Math.min(final?.consumer.consumedBytes ?? 0, inflatedBytes)
    ctx.progress({ done, total: inflatedBytes, stage: 'done', ...(last === null ? {} : { pipeline: last }) })
    return summariseRun({
      params: ctx.params,
      input: { file: path.basename(input.file), bytes: inflatedBytes, compressedBytes: input.compressedBytes },
      samples,
      client,
      final,
      server,
      idleRss,
      relay
    })
  } finally {
    stopListening()
    // cancelled, or the client failed: the upload must not read on at the consumer's pace for nobody
    if (final === null || final.outcome === null) await stopUpload(uploadUrl).catch(function goneAlready () {})
  }
}

/** GET the upload's state; null while the server does not know it yet. */
async function readUpload (url, signal) {
  const res = await fetch(url, { headers: runKeyHeaders(), signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]) })
  if (res.status === 404) {
    await res.body?.cancel()
    return null
  }
  const body = await res.json()
  if (res.status !== 200) throw new Error(`GET ${new URL(url).pathname} answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`)
  return body
}

/** PATCH the upload's live settings; null when it is gone. */
async function patchUpload (url, change, signal) {
  const res = await fetch(url, {
    method: 'PATCH',
    headers: { ...runKeyHeaders(), 'content-type': 'application/json' },
    body: JSON.stringify(change),
    signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)])
  })
  const body = await res.json()
  if (res.status === 404) return null
  if (res.status !== 200) throw new Error(`PATCH answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`)
  return body
}

/** DELETE the upload: stopped where it is (gone already is fine). Not tied to the run's signal: a cancelled run stops it too. */
async function stopUpload (url) {
  const res = await fetch(url, { method: 'DELETE', headers: runKeyHeaders(), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  await res.body?.cancel()
}

/** The upload's state once the server has ended it (or the last seen, if it takes too long; null if never seen). */
async function finalState (url, signal) {
  const deadline = performance.now() + FINAL_WAIT_MS
  let state = await readUpload(url, signal)
  while (state !== null && state.outcome === null && performance.now() < deadline) {
    await sleep(100, null, { signal })
    state = await readUpload(url, signal)
  }
  return state
}

/**
 * The inflated size of a one-member gzip file, from its trailer (ISIZE: the size modulo 2^32),
 * taking the wrap nearest the size it was generated for.
 */
async function inflatedSize (file, asked) {
  const handle = await fs.promises.open(file, 'r')
  try {
    const { size } = await handle.stat()
    const trailer = Buffer.alloc(4)
    await handle.read(trailer, 0, 4, size - 4)
    const isize = trailer.readUInt32LE(0)
    return isize + Math.max(0, Math.round((asked - isize) / 2 ** 32)) * 2 ** 32
  } finally {
    await handle.close()
  }
}
