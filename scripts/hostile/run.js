/**
 * The hostile bench's runner: each row (attacks.js `attackRows`) on a fresh lab, measured alike.
 * Before: a warm-up request, the worker's idle RSS, the data directory's bytes. During: the RSS every
 * SAMPLE_MS, the normal /good request when the attack says. After: clients gone, requests in flight
 * settled, bytes on disk, crash lines; then the lab stopped and what it wrote removed.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { DEFAULTS } from '../../lib/config/options.js'
import { attackRows, outcomeLabel } from './attacks.js'
import { smallGoodBody } from './bodies.js'
import { createClientSet } from './clients.js'
import {
  bytesUnder, guardDataDir, idleRss, readBudget, readCrashes, sampleRss, serverTakesDataDir, settleBytes, settleInFlight, startHostileLab
} from './lab.js'
import { judge } from './verdict.js'

/** How often the worker's RSS is read from /proc. */
export const SAMPLE_MS = 20
/** What an attack that overran its time gets to wind down once its clients are destroyed. */
const WIND_DOWN_MS = 5000

/** Run the chosen attacks (normalizeHostileOptions), one fresh lab a row; `report` takes progress and log events. */
export async function runHostile (opts, report) {
  const probeBody = await smallGoodBody(opts.probeItems)
  const ownDataDirs = await serverTakesDataDir()
  const planned = attackRows(opts.attacks, opts.routes)
  const rows = []
  for (const [k, plan] of planned.entries()) {
    report({ type: 'progress', done: k, total: planned.length, label: plan.label })
    const row = plan.skip === null ? await measureAttack(plan, opts, { probeBody, ownDataDirs }) : skippedRow(plan)
    report({ type: 'log', line: `${plan.label}: ${row.verdict}` })
    rows.push(row)
  }
  report({ type: 'progress', done: planned.length, total: planned.length, label: 'done' })
  const shared = path.relative(process.cwd(), DEFAULTS.dataDir) || DEFAULTS.dataDir
  return { dataDir: ownDataDirs ? 'a temporary directory per attack (server.js --data-dir)' : shared, ownDataDirs, rows }
}

/** The normal request: a small valid gzipped body to /good, timed. */
function probeGood (clients, url, body, timeoutMs) {
  return clients.request(`${url}/good`, {
    method: 'POST',
    headers: { 'content-type': 'application/gzip', 'content-length': String(body.length) },
    body,
    timeoutMs
  })
}

/** The first fields of a row: which attack, where it went, and whether the growth bound applies. */
function rowHead (plan) {
  const { attack } = plan
  const { label, route, target, judged } = plan
  return { id: attack.id, label, route, group: attack.group, title: attack.title, target, judged }
}

/** A row not run: its route does not read what the attack sends. */
function skippedRow (plan) {
  const row = { ...rowHead(plan), skipped: plan.skip }
  return { ...row, ...judge(row) }
}

async function measureAttack (plan, opts, { probeBody, ownDataDirs }) {
  const { attack } = plan
  const scratch = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-hostile-'))
  const dataDir = ownDataDirs ? path.join(scratch, 'data') : DEFAULTS.dataDir
  const guard = ownDataDirs ? null : await guardDataDir(dataDir)
  const measuring = createClientSet()
  let lab = null
  const row = { ...rowHead(plan), dataDir }
  try {
    const input = attack.prepare ? await attack.prepare(opts, scratch) : null
    if (ownDataDirs) await fs.promises.mkdir(dataDir)
    lab = await startHostileLab({ flags: opts.serverFlags, dataDir: ownDataDirs ? dataDir : null })
    row.memoryBudget = readBudget(lab.output())
    const warm = await probeGood(measuring, lab.url, probeBody, opts.probeTimeoutMs)
    row.warmUp = outcomeLabel(warm)
    await sleep(500)
    row.idleRss = await idleRss(lab)
    row.diskBefore = await bytesUnder(dataDir)
    Object.assign(row, await attackAndWatch(attack, lab, opts, { probeBody, input, measuring, route: plan.route }))
    const disk = await settleBytes(dataDir, opts.settleMs)
    row.diskAfter = disk.bytes
    row.diskAdded = disk.bytes - row.diskBefore
    row.diskWaitedMs = disk.waitedMs
  } catch (err) {
    row.error = err.message
  } finally {
    measuring.destroyAll()
    if (lab !== null) {
      await lab.stop()
      row.workerPids = lab.workerPids()
      const said = lab.output().split('\n').filter(function worthKeeping (line) { return /streamlab: /.test(line) })
      row.serverOutput = said.slice(-20)
    }
    try {
      row.removedAfter = ownDataDirs ? [] : await guard.restore(row.workerPids ?? [])
      await fs.promises.rm(scratch, { recursive: true, force: true })
    } catch (err) {
      row.cleanupError = err.message
    }
  }
  return { ...row, ...judge(row, opts.growthBound) }
}

/** The attack itself, under its time limit, with the sampler, the normal request and the settling after. */
async function attackAndWatch (attack, lab, opts, { probeBody, input, measuring, route }) {
  const outputStart = lab.output().length
  const clients = createClientSet()
  const controller = new AbortController()
  const started = performance.now()
  const deadline = started + opts.attackTimeoutMs
  let probe = null
  const ctx = {
    url: lab.url,
    params: opts,
    input,
    route,
    clients,
    signal: controller.signal,
    timeLeft: function timeLeft () { return Math.max(1, deadline - performance.now()) },
    probeAfter: function probeAfter (ms) {
      probe ??= sleep(ms).then(function timedProbe () {
        return probeGood(measuring, lab.url, probeBody, opts.probeTimeoutMs)
      })
      return probe
    }
  }
  const sampler = sampleRss(lab, SAMPLE_MS)
  let timer = null
  const overran = new Promise(function waitForDeadline (resolve) {
    timer = setTimeout(function stopAttack () {
      controller.abort()
      clients.destroyAll()
      // whatever is still pending gets a moment to notice, then the bench moves on
      setTimeout(resolve, WIND_DOWN_MS, { timedOut: true }).unref()
    }, opts.attackTimeoutMs)
  })
  // settled either way, so an attack that fails after the deadline rejects nothing unheard
  const running = attack.run(ctx).then(function finished (details) { return { details } }, function failed (error) { return { error } })
  const ended = await Promise.race([running, overran])
  clearTimeout(timer)
  const timedOut = ended.timedOut === true
  const details = ended.details ?? null
  const attackError = ended.error ? (ended.error.stack ?? String(ended.error)) : null
  const probed = await ctx.probeAfter(0)
  const memory = sampler.stop()
  const attackMs = performance.now() - started
  clients.destroyAll()
  const settled = await settleInFlight(measuring, lab.url, opts.settleMs)
  const crashes = readCrashes(lab.output().slice(outputStart))
  return {
    attackMs: Math.round(attackMs),
    timedOut,
    attackError,
    details,
    probe: {
      label: outcomeLabel(probed),
      status: probed.status,
      ms: Math.round(probed.ms),
      errorType: probed.body?.error?.type ?? null,
      error: probed.error
    },
    kills: crashes.kills,
    crashLines: crashes.lines,
    crashedPids: crashes.crashedPids,
    gaveUp: crashes.gaveUp,
    labAlive: lab.alive(),
    peakRss: memory.peakRss,
    maxRss: memory.maxRss,
    maxHwm: memory.maxHwm,
    samples: memory.samples,
    rssPoints: downsample(memory.points, 200),
    inFlight: settled
  }
}

/** At most `count` points, each the highest RSS of its stretch: a peak must survive the thinning. */
function downsample (points, count) {
  if (points.length <= count) return points.map(function round (p) { return { s: +p.s.toFixed(3), rss: p.rss } })
  const out = []
  const per = points.length / count
  for (let k = 0; k < count; k++) {
    const stretch = points.slice(Math.floor(k * per), Math.floor((k + 1) * per))
    const top = stretch.reduce(function higher (a, b) { return b.rss > a.rss ? b : a })
    out.push({ s: +top.s.toFixed(3), rss: top.rss })
  }
  return out
}
