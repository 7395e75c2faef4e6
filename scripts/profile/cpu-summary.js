/**
 * Where a thread's CPU went, from one `.cpuprofile` (Node's --cpu-prof writes one a thread): each
 * sample is put under the first kind of work its stack names, read from the leaf up, so a
 * native call (JSON.parse, a hash update, postMessage) counts for the work that made it.
 */
import fs from 'node:fs'

/**
 * The kinds of work, in the order they are tried on each frame; the first that matches a frame of
 * the stack, leaf first, takes the sample. `(idle)`, `(garbage collector)` and `(program)` are V8's.
 */
export const KINDS = Object.freeze([
  { kind: 'idle', test: function isIdle (f) { return f.functionName === '(idle)' } },
  { kind: 'collections', test: function isGc (f) { return f.functionName === '(garbage collector)' } },
  { kind: 'native, unattributed', test: function isProgram (f) { return f.functionName === '(program)' } },
  { kind: 'decode', test: function isDecode (f) { return /^node:buffer$/.test(f.url) && /slice|toString/i.test(f.functionName) } },
  { kind: 'parse', test: function isParse (f) { return /\/lib\/parse\/parse-batch\.js$|\/lib\/json\/(parse-cost|validate)\.js$/.test(f.url) } },
  { kind: 'tally', test: function isTally (f) { return /\/lib\/parse\/tally\.js$/.test(f.url) } },
  { kind: 'find records', test: function isFind (f) { return /\/lib\/json\/(records|line-batcher|bytes|format)\.js$/.test(f.url) } },
  { kind: 'digest', test: function isDigest (f) { return /^node:internal\/crypto\/hash$/.test(f.url) } },
  { kind: 'inflate calls', test: function isInflate (f) { return /^node:zlib$/.test(f.url) || /\/lib\/ingest\/(gzip-framing|decoder-memory|zstd-frame)\.js$/.test(f.url) } },
  { kind: 'messages', test: function isMessage (f) { return f.functionName === 'postMessage' || /\/lib\/parse\/(pool|parse-thread)\.js$|^node:internal\/(worker|per_context\/messageport|event_target)/.test(f.url) } },
  { kind: 'counters', test: function isCounter (f) { return /\/lib\/ingest\/count\.js$/.test(f.url) } },
  { kind: 'record sink', test: function isSink (f) { return /\/lib\/parse\/record-sink\.js$/.test(f.url) } },
  { kind: 'reads', test: function isRead (f) { return /^node:(net|internal\/stream_base_commons|_http_server|_http_common|internal\/http)/.test(f.url) || /\/lib\/ingest\/read\.js$/.test(f.url) } },
  { kind: 'streams', test: function isStream (f) { return /^node:internal\/streams\//.test(f.url) } },
  { kind: 'metrics', test: function isMetrics (f) { return f.functionName === 'memoryUsage' || /\/lib\/(metrics|limits)\//.test(f.url) } },
  { kind: 'start-up', test: function isStartUp (f) { return /^node:internal\/(modules|bootstrap)\//.test(f.url) || /^compile/.test(f.functionName) } }
])

function kindOf (node, byId) {
  for (let at = node; at; at = byId.get(at.parent)) {
    for (const { kind, test } of KINDS) if (test(at.callFrame)) return kind
  }
  return 'other'
}

/**
 * One profile's time by kind of work.
 * @param {{ nodes: object[], samples: number[], timeDeltas: number[] }} profile a parsed .cpuprofile
 * @returns {{ ms: number, busyMs: number, kinds: Array<{ kind: string, ms: number }> }} kinds by time,
 *   idle included; busyMs leaves idle out
 */
export function summarizeProfile (profile) {
  if (!Array.isArray(profile?.nodes) || !Array.isArray(profile.samples) || !Array.isArray(profile.timeDeltas)) {
    throw new TypeError('a .cpuprofile has nodes, samples and timeDeltas')
  }
  const byId = new Map()
  for (const node of profile.nodes) byId.set(node.id, node)
  for (const node of profile.nodes) for (const child of node.children ?? []) byId.get(child).parent = node.id
  const kindById = new Map()
  const ms = new Map()
  let total = 0
  for (let k = 0; k < profile.samples.length; k++) {
    const id = profile.samples[k]
    // a sample's time is the delta to the next one (V8 records the delta before each sample)
    const dt = (profile.timeDeltas[k + 1] ?? 0) / 1000
    if (!kindById.has(id)) kindById.set(id, kindOf(byId.get(id), byId))
    const kind = kindById.get(id)
    ms.set(kind, (ms.get(kind) ?? 0) + dt)
    total += dt
  }
  const kinds = [...ms].map(function entry ([kind, t]) { return { kind, ms: t } }).sort(function most (a, b) { return b.ms - a.ms })
  return { ms: total, busyMs: total - (ms.get('idle') ?? 0), kinds }
}

/** A profile file's summary; the thread named as results.js names it. */
export async function summarizeProfileFile (file) {
  return summarizeProfile(JSON.parse(await fs.promises.readFile(file, 'utf8')))
}

/**
 * The lines the profiler prints for one thread: its busy time, then each kind of work over 1 % of it.
 * @param {string} thread e.g. 'main thread'
 * @param {{ ms: number, busyMs: number, kinds: object[] }} summary
 */
export function summaryLines (thread, summary) {
  const share = function pct (t) { return `${(100 * t / Math.max(summary.busyMs, 1e-9)).toFixed(0)} %` }
  const lines = [`${thread}: busy ${(summary.busyMs / 1000).toFixed(2)} s of ${(summary.ms / 1000).toFixed(2)} s profiled`]
  for (const { kind, ms } of summary.kinds) {
    if (kind === 'idle' || ms < summary.busyMs / 100) continue
    lines.push(`    ${kind.padEnd(22)} ${(ms / 1000).toFixed(2).padStart(6)} s  ${share(ms).padStart(5)}`)
  }
  return lines
}
