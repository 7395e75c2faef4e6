/**
 * The ingest experiment as a bench: one generated body sent to every ingest route, sizes x concurrency x routes,
 * each measurement on a fresh lab process with its peak RSS read from outside (lib/measure/lab-memory.js).
 * Timed and counted cells, and why refusals are counted apart: experiments/README.md#ingest.
 */
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import fs from 'node:fs'
import zlib from 'node:zlib'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import { startLabProcess } from '../../lib/measure/lab-process.js'
import { closePeakWindow, openPeakWindow } from '../../lib/measure/lab-memory.js'
import { latencyStats, median } from '../../lib/measure/stats.js'
import { uploadMany } from '../../lib/experiments/upload-client.js'
import { ensureInput } from '../../lib/measure/inputs.js'
import { INGEST_ROUTES, INGEST_ROUTE_NAMES } from '../../lib/ingest/contenders.js'
import { runChildJob } from '../../lib/experiments/load.js'
import { cpuPerGB, processCpuSeconds } from '../../lib/measure/cpu.js'

const BOUND_PROCESS = fileURLToPath(new URL('./bound-process.js', import.meta.url))

const WARM_BODY = zlib.gzipSync(JSON.stringify({ items: [{ id: 1, numbers: [1.5] }] }))

/** Statuses that mean "not now" or "not this": the lab's admission, budget and queue answers. */
const REFUSALS = new Set([413, 503])

/** Seconds autocannon waits for one answer before counting a timeout (a 1 MB /bad under 100 connections takes seconds). */
const TIMED_REQUEST_TIMEOUT_S = 60

/**
 * A counted cell: at least `concurrency` uploads (every connection sends one), and enough to offer about
 * `COUNTED_OFFER` inflated bytes, but at least `COUNTED_MIN` and, beyond the concurrency, never more than `COUNTED_MAX`.
 */
export const COUNTED_OFFER = 200e6
export const COUNTED_MIN = 2
export const COUNTED_MAX = 100

/** Uploads in a counted cell of `bytes` inflated; `fixed`: a count the caller chose (`--requests`). */
export function countedRequests (bytes, concurrency, fixed = null) {
  if (fixed !== null) return fixed
  const offered = Math.min(COUNTED_MAX, Math.max(COUNTED_MIN, Math.ceil(COUNTED_OFFER / bytes)))
  return Math.max(concurrency, offered)
}

async function warmUp (url) {
  for (const route of INGEST_ROUTE_NAMES) {
    const res = await fetch(`${url}/${route}`, { method: 'POST', headers: INGEST_ROUTES[route].headers, body: WARM_BODY })
    if (res.status !== 200) throw new Error(`warm-up POST /${route} answered ${res.status}: ${await res.text()}`)
  }
  await sleep(300)
}

/**
 * What a load's answers say: latencies of the 200s, refusals and errors by type, and the distinct summaries
 * (of the first answers, then a sample, so that parsing a fast route's answers never competes with it for the CPU).
 */
class Answers {
  constructor () {
    this.ok = 0
    this.refused = 0
    this.failed = 0
    this.okMs = []
    this.errors = {}
    this.summaries = new Set()
    this.summary = null
    this.inflatedBytes = 0
  }

  add (status, ms, body) {
    if (status === 200) {
      this.ok++
      this.okMs.push(ms)
      if (body !== undefined && body?.summary) {
        const key = JSON.stringify(body.summary)
        this.summaries.add(key)
        if (this.summary === null) this.summary = body.summary
        this.inflatedBytes = body.summary.inflatedBytes
      }
      return
    }
    if (REFUSALS.has(status)) this.refused++
    else this.failed++
    const type = body?.error?.type ?? `status ${status}`
    this.errors[type] = (this.errors[type] ?? 0) + 1
  }

  /** A request that got no answer at all. */
  lost (reason) {
    this.failed++
    this.errors[reason] = (this.errors[reason] ?? 0) + 1
  }

  get answered () {
    return this.ok + this.refused + this.failed
  }
}

/** Parse every one of the first answers, then one in `SAMPLE_EVERY`. */
const PARSE_FIRST = 20
const SAMPLE_EVERY = 64

function parseAnswer (text) {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/** A time box: autocannon's connections send the body again and again. */
async function timedLoad (url, route, body, { concurrency, durationS }) {
  const answers = new Answers()
  let seen = 0
  const instance = autocannon({
    url: `${url}/${route}`,
    method: 'POST',
    headers: { ...INGEST_ROUTES[route].headers },
    body,
    connections: concurrency,
    duration: durationS,
    timeout: TIMED_REQUEST_TIMEOUT_S,
    requests: [{
      method: 'POST',
      path: `/${route}`,
      onResponse: function readAnswer (status, text) {
        seen++
        const parse = status !== 200 || seen <= PARSE_FIRST || seen % SAMPLE_EVERY === 0
        pending.push({ status, body: parse ? parseAnswer(text) : undefined })
      }
    }]
  })
  // onResponse runs before autocannon's 'response' event, which brings the latency
  const pending = []
  instance.on('response', function countAnswer (client, status, resBytes, ms) {
    const answer = pending.shift()
    answers.add(status, ms, answer?.status === status ? answer.body : undefined)
  })
  instance.on('reqError', function countError (err) {
    answers.lost(err.message === 'request timed out' ? 'timeout' : `connection: ${err.code ?? err.message}`)
  })
  const result = await instance
  return { answers, seconds: result.duration }
}

/** A fixed count of uploads streamed from disk, `concurrency` in flight. */
async function countedLoad (url, route, file, { concurrency, requests }) {
  const answers = new Answers()
  const started = performance.now()
  const results = await uploadMany(`${url}/${route}`, file, { concurrency, requests, headers: INGEST_ROUTES[route].headers })
  const seconds = (performance.now() - started) / 1000
  for (const r of results) {
    if (r.status === 0) answers.lost(`connection: ${r.error}`)
    else answers.add(r.status, r.ms, r.body)
  }
  return { answers, seconds }
}

/** One measurement: a fresh lab process, warm-up, idle RSS, peak reset, the load, the peak; `body` feeds a timed cell. */
async function measureIngest (cell) {
  const lab = cell.url
    ? { url: cell.url, pid: null, stop: async function keepRunning () {} }
    : await startLabProcess(cell.serverFlags)
  try {
    await warmUp(lab.url)
    const pid = lab.pid
    // a server we did not start is not ours to reset or read
    const window = pid ? await openPeakWindow(lab) : { idleRss: null, reset: false, kernel: false }
    const loadAverage = os.loadavg()[0]
    // the worker's CPU over the load, every thread, read from outside (null without /proc)
    const cpuBefore = pid ? processCpuSeconds(pid) : null
    const { answers, seconds } = cell.mode === 'timed'
      ? await timedLoad(lab.url, cell.route, cell.body, cell)
      : await countedLoad(lab.url, cell.route, cell.file, cell)
    const cpuAfter = pid ? processCpuSeconds(pid) : null
    // a worker killed by the supervisor and restarted has another pid: its peak is not this load's
    const restarted = pid !== null && lab.pid !== pid
    const memory = restarted
      ? { idleRss: window.idleRss, peakRss: null, peakAboveIdle: null, peakSource: null }
      : await closePeakWindow(window, { pid, url: lab.url })
    return {
      route: cell.route,
      mode: cell.mode,
      concurrency: cell.concurrency,
      durationS: cell.mode === 'timed' ? cell.durationS : null,
      seconds,
      requests: answers.answered,
      ok: answers.ok,
      refused: answers.refused,
      failed: answers.failed,
      errors: answers.errors,
      reqPerSecond: answers.ok / seconds,
      mbPerSecond: answers.ok * answers.inflatedBytes / 1e6 / seconds,
      cpuPerGB: restarted || cpuBefore === null || cpuAfter === null
        ? null
        : cpuPerGB(cpuAfter - cpuBefore, answers.ok * answers.inflatedBytes),
      latencyMs: latencyStats(answers.okMs),
      ...memory,
      workerRestarted: restarted,
      loadAverage,
      summary: answers.summary,
      summariesAgree: answers.summaries.size <= 1
    }
  } finally {
    await lab.stop()
  }
}

/**
 * The sweep: sizes x concurrency x routes, `repeat` times each (medians reported). Each cell carries the bound its
 * MB/s is held to: the one given (`bound`, from a bound bench's figures file) or one measured quickly on its body.
 */
export async function runIngestBench (options, report) {
  const cells = []
  const total = options.sizes.length * options.concurrency.length * options.routes.length * options.repeat
  let done = 0
  for (const [index, bytes] of options.sizes.entries()) {
    const size = options.sizeLabels?.[index] ?? `${bytes} B`
    const input = await ensureInput({ bytes, format: options.format }, function log (line) { report({ type: 'log', line }) })
    const bound = options.bound ?? await quickBound(input.file, options.format, report)
    const mode = bytes <= options.timedUpTo ? 'timed' : 'counted'
    const body = mode === 'timed' ? await fs.promises.readFile(input.file) : null
    const limit = String(Math.floor(Math.max(bytes * 1.05, 1024 * 1024)))
    const serverFlags = [
      '--no-request-peak',
      // a budget, the lab's default unless told otherwise: what /bad cannot hold it refuses, where
      // 100 x 500 MB buffered without one would take the whole machine's memory
      `--memory-limit=${options.memoryLimit}`,
      '--limit-inflated', limit,
      '--limit-compressed', String(Math.max(input.compressedBytes * 2, 1 << 20)),
      ...options.serverFlags
    ]
    for (const concurrency of options.concurrency) {
      // --quick: one upload per connection, unless a count was given
      const fixedCount = options.requests ?? (options.quick ? concurrency : null)
      const requests = mode === 'counted' ? countedRequests(bytes, concurrency, fixedCount) : null
      // round by round, every route once per round: a ratio compares routes measured
      // side by side in time, not one route's runs early and another's late
      const runs = new Map(options.routes.map(function noRunsYet (route) { return [route, []] }))
      for (let r = 0; r < options.repeat; r++) {
        for (const route of options.routes) {
          const load = mode === 'timed' ? `${options.durationS} s` : `${requests} uploads`
          report({ type: 'progress', done, total, label: `${route} ${size} x${concurrency} (${load}) run ${r + 1}/${options.repeat}` })
          runs.get(route).push(await measureIngest({
            route, file: input.file, body, mode, concurrency, requests, durationS: options.durationS, serverFlags, url: options.url
          }))
          done++
        }
      }
      for (const route of options.routes) {
        const key = { route, size, bytes, format: options.format, compressedBytes: input.compressedBytes, concurrency, mode, bound }
        cells.push(summariseRuns(key, runs.get(route)))
        report({ type: 'cell', cell: cells[cells.length - 1] })
      }
    }
  }
  report({ type: 'progress', done, total, label: 'done' })
  return cells
}

/**
 * The machine's bound on this body (MB/s, the stages' CPU s/GB), one pass a stage before a lab starts (`bench -- bound` takes
 * care), in a process of its own (bound-process.js): the CPU it reads is the stages' alone, none of this process's clients.
 */
async function quickBound (file, format, report) {
  report({ type: 'log', line: 'measuring the machine\'s bound on this body (one pass a stage, in a process of its own) ...' })
  const measured = await runChildJob(BOUND_PROCESS, { file, format })
  return { mbPerSecond: measured.mbPerSecond, cores: measured.cores, cpuPerGB: measured.cpuPerGB, source: 'measured' }
}

/** The median of the figures present, null when none is. */
function medianOrNull (values) {
  const present = values.filter(function isNumber (v) { return typeof v === 'number' })
  return present.length === 0 ? null : median(present)
}

function summariseRuns (key, runs) {
  function pick (get) { return median(runs.map(get)) }
  function sum (get) { return runs.reduce(function add (s, r) { return s + get(r) }, 0) }
  return {
    ...key,
    runs: runs.length,
    durationS: runs[0].durationS,
    reqPerSecond: pick(function rps (r) { return r.reqPerSecond }),
    mbPerSecond: pick(function mbps (r) { return r.mbPerSecond }),
    cpuPerGB: medianOrNull(runs.map(function cpu (r) { return r.cpuPerGB })),
    peakRss: pick(function peak (r) { return r.peakRss }),
    peakAboveIdle: pick(function above (r) { return r.peakAboveIdle }),
    idleRss: pick(function idle (r) { return r.idleRss }),
    latencyAvgMs: pick(function avg (r) { return r.latencyMs.avg }),
    latencyP99Ms: pick(function p99 (r) { return r.latencyMs.p99 }),
    latencyMaxMs: pick(function max (r) { return r.latencyMs.max }),
    ok: sum(function ok (r) { return r.ok }),
    requests: sum(function requests (r) { return r.requests }),
    refused: sum(function refused (r) { return r.refused }),
    failed: sum(function failed (r) { return r.failed }),
    errors: runs.map(function errs (r) { return r.errors }),
    workerRestarts: sum(function restarts (r) { return r.workerRestarted ? 1 : 0 }),
    loadAverage: pick(function load (r) { return r.loadAverage }),
    summary: runs.find(function withSummary (r) { return r.summary })?.summary ?? null,
    summariesAgree: runs.every(function agree (r) { return r.summariesAgree }),
    measurements: runs
  }
}
