/**
 * Where a thread's CPU went, from one `.cpuprofile` (Node's --cpu-prof writes one a thread): each
 * sample is put under the first kind of work its stack names, read from the leaf up, so a
 * native call (JSON.parse, a hash update, postMessage) counts for the work that made it.
 */
import fs from 'node:fs'

/** A test of a frame: its function is `name`, or its url matches one of `urls`. */
function frame (name, ...urls) {
  return function test (f) { return f.functionName === name || urls.some(function matches (u) { return u.test(f.url) }) }
}

const NODE_MESSAGES = /^node:internal\/(worker|per_context\/messageport|event_target)/
const NODE_READS = /^node:(net|internal\/stream_base_commons|_http_server|_http_common|internal\/http)/
const NODE_START = /^node:internal\/(modules|bootstrap)\//

/**
 * The kinds of work, tried in order on each frame of the stack, leaf first: the first to match takes
 * the sample. `(idle)`, `(garbage collector)` and `(program)` are V8's.
 */
export const KINDS = Object.freeze([
  { kind: 'idle', test: frame('(idle)') },
  { kind: 'collections', test: frame('(garbage collector)') },
  { kind: 'native, unattributed', test: frame('(program)') },
  { kind: 'decode', test: function isDecode (f) { return f.url === 'node:buffer' && /slice|toString/i.test(f.functionName) } },
  { kind: 'parse', test: frame(null, /\/lib\/parse\/parse-batch\.js$|\/lib\/json\/(parse-cost|validate)\.js$/) },
  { kind: 'tally', test: frame(null, /\/lib\/parse\/tally\.js$/) },
  { kind: 'find records', test: frame(null, /\/lib\/json\/(records|line-batcher|bytes|format)\.js$/) },
  { kind: 'digest', test: frame(null, /^node:internal\/crypto\/hash$/) },
  { kind: 'inflate calls', test: frame(null, /^node:zlib$/, /\/lib\/ingest\/(gzip-framing|decoder-memory|zstd-frame)\.js$/) },
  { kind: 'messages', test: frame('postMessage', /\/lib\/parse\/(pool|parse-thread)\.js$/, NODE_MESSAGES) },
  { kind: 'counters', test: frame(null, /\/lib\/ingest\/count\.js$/) },
  { kind: 'record sink', test: frame(null, /\/lib\/parse\/record-sink\.js$/) },
  { kind: 'reads', test: frame(null, NODE_READS, /\/lib\/ingest\/read\.js$/) },
  { kind: 'streams', test: frame(null, /^node:internal\/streams\//) },
  { kind: 'metrics', test: frame('memoryUsage', /\/lib\/(metrics|limits)\//) },
  { kind: 'start-up', test: function isStartUp (f) { return NODE_START.test(f.url) || f.functionName.startsWith('compile') } }
])

function kindOf (node, byId) {
  for (let at = node; at; at = byId.get(at.parent)) {
    for (const { kind, test } of KINDS) if (test(at.callFrame)) return kind
  }
  return 'other'
}

/** A parsed .cpuprofile's time by kind of work, most first, idle included; busyMs leaves idle out. */
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

/** The lines the profiler prints for one thread: its busy time, then each kind of work over 1 % of it. */
export function summaryLines (thread, summary) {
  const share = function pct (t) { return `${(100 * t / Math.max(summary.busyMs, 1e-9)).toFixed(0)} %` }
  const lines = [`${thread}: busy ${(summary.busyMs / 1000).toFixed(2)} s of ${(summary.ms / 1000).toFixed(2)} s profiled`]
  for (const { kind, ms } of summary.kinds) {
    if (kind === 'idle' || ms < summary.busyMs / 100) continue
    lines.push(`    ${kind.padEnd(22)} ${(ms / 1000).toFixed(2).padStart(6)} s  ${share(ms).padStart(5)}`)
  }
  return lines
}
