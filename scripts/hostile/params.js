/** The hostile bench's parameters, full and `--quick`, frozen; flags override the set chosen, a bad value a TypeError naming it. */
import { BOMB_CODECS, bombCodecAvailable } from '../../lib/generate/bombs.js'
import { INGEST_ROUTE_NAMES } from '../../lib/ingest/contenders.js'
import { MiB, parseByteSize } from '../../lib/util/units.js'
import { list } from '../../lib/measure/args.js'

/** The attacks in the order they run, in the numbered groups of docs/hostile.md. */
export const ATTACK_GROUPS = Object.freeze({
  1: Object.freeze(['dense-objects', 'dense-arrays', 'dense-numbers']),
  2: Object.freeze(['abandoned-uploads']),
  3: Object.freeze(['ratio-bombs', 'big-bad-body']),
  4: Object.freeze(['buffered-uploads']),
  5: Object.freeze(['batch-export']),
  6: Object.freeze(['drip-clients']),
  7: Object.freeze(['metrics-flood']),
  8: Object.freeze(['disk-fill']),
  9: Object.freeze(['wide-windows', 'window-bombs'])
})

const ATTACK_IDS = Object.freeze(Object.values(ATTACK_GROUPS).flat())

/**
 * Flag -> [parameter, kind, the full run's value, --quick's, what it sets (the attack's number first)].
 * Kinds: count (positive integer), bytes (500MB, 15.5MiB), ms (60s, 500ms, 2m; a bare number is seconds,
 * as server.js reads durations). The full run takes a few minutes on two cores, most of it the drip's
 * minute; --quick, the same attacks small enough to see every row in well under a minute.
 */
const FLAGS = Object.freeze({
  records: ['records', 'count', 8, 2, '1: records in each dense body'],
  'record-bytes': ['recordBytes', 'bytes', Math.round(15.5 * MiB), MiB, '1: bytes of each dense record'],
  'abandon-clients': ['abandonClients', 'count', 200, 20, '2: uploads that give up'],
  'abandon-concurrency': ['abandonConcurrency', 'count', 20, 10, '2: of them at once'],
  'abandon-bytes': ['abandonBytes', 'bytes', 20_000_000, 2_000_000, '2: the gzip body each declares'],
  'abandon-after': ['abandonAfterMs', 'ms', 50, 50, '2: when each hangs up'],
  bombs: ['bombs', 'count', 6, 2, '3: ratio bombs to /bad in a row, in each of --bomb-codecs'],
  'bomb-bytes': ['bombBytes', 'bytes', 450_000_000, 50_000_000, '3: what each inflates to (450MB: 445 KB sent)'],
  'bad-bytes': ['badBytes', 'bytes', 300_000_000, 20_000_000, '3: the generated document sent through /bad'],
  uploads: ['uploads', 'count', 3, 3, '4: uploads to /upload-buffer at once'],
  'upload-bytes': ['uploadBytes', 'bytes', 200_000_000, 10_000_000, '4: each'],
  'batch-limit': ['batchLimit', 'count', 2_000_000, 1000, '5: rows asked of GET /db/batch'],
  'batch-timeout': ['batchTimeoutMs', 'ms', 60_000, 15_000, '5: client timeout'],
  drips: ['drips', 'count', 8, 2, '6: clients sending a byte at a time'],
  'drip-every': ['dripEveryMs', 'ms', 10_000, 1000, '6: between bytes'],
  'drip-for': ['dripForMs', 'ms', 60_000, 3000, '6: then they hang up'],
  'sse-clients': ['sseClients', 'count', 3000, 50, '7: /metrics streams held open'],
  'sse-interval': ['sseIntervalMs', 'count', 100, 100, '7: their ?interval= in ms'],
  'sse-hold': ['sseHoldMs', 'ms', 10_000, 2000, '7: how long they are held'],
  'fill-for': ['fillForMs', 'ms', 10_000, 2000, '8: how long the uploads loop and the save run'],
  'fill-bytes': ['fillBytes', 'bytes', 4_000_000, 1_000_000, '8: each upload to /upload-stream'],
  'fill-concurrency': ['fillConcurrency', 'count', 4, 2, '8: uploads at once'],
  'fill-uploads': ['fillUploads', 'count', 2000, 50, '8: uploads at most'],
  'fill-generate': ['fillGenerateBytes', 'bytes', 8_000_000_000, 100_000_000, '8: GET /generate?save=1&level=0&bytes='],
  'window-uploads': ['windowUploads', 'count', 16, 4, '9: valid uploads at once in each of br and zstd (of --bomb-codecs)'],
  'window-bytes': ['windowBytes', 'bytes', 40_000_000, 4_000_000, '9: the document each inflates to'],
  'window-bombs': ['windowBombs', 'count', 16, 4, '9: ratio bombs at once in each of br and zstd (--bomb-bytes each)'],
  'probe-items': ['probeItems', 'count', 1000, 100, 'items in the normal /good request'],
  'probe-timeout': ['probeTimeoutMs', 'ms', 30_000, 10_000, 'its client timeout'],
  'attack-timeout': ['attackTimeoutMs', 'ms', 180_000, 60_000, 'the most any attack may take'],
  settle: ['settleMs', 'ms', 5000, 3000, 'how long to wait for requests in flight to reach 0'],
  'growth-bound': ['growthBound', 'bytes', 64 * MiB, 64 * MiB, 'growth allowed on attacks to /good']
})

const FULL = valuesAt(2)
const QUICK = valuesAt(3)

function valuesAt (column) {
  return Object.freeze(Object.fromEntries(Object.values(FLAGS).map(function value (row) { return [row[0], row[column]] })))
}

/** The parseArgs specs (no defaults: a flag not given leaves the chosen set's value). */
export const FLAG_SPECS = Object.freeze(Object.fromEntries([
  ['attacks', { type: 'string' }],
  ['routes', { type: 'string' }],
  ['bomb-codecs', { type: 'string' }],
  ['quick', { type: 'boolean' }],
  ['server-flag', { type: 'string', multiple: true }],
  ...Object.keys(FLAGS).map(function spec (flag) { return [flag, { type: 'string' }] })
]))

/** The flag text of usage(): one line per flag, with the full and quick values. */
export function flagLines () {
  return Object.entries(FLAGS).map(function line ([flag, [, kind, full, quick, text]]) {
    return `  --${flag.padEnd(20)} ${text} (default ${shown(full, kind)}, quick ${shown(quick, kind)})`
  }).join('\n')
}

function shown (value, kind) {
  if (kind === 'ms') return value % 1000 === 0 ? `${value / 1000}s` : `${value}ms`
  if (kind === 'bytes') {
    if (value % 1e9 === 0) return `${value / 1e9}GB`
    if (value % 1e6 === 0) return `${value / 1e6}MB`
    return value % (MiB / 2) === 0 ? `${value / MiB}MiB` : `${value}B`
  }
  return String(value)
}

/**
 * parseArgs' values as a new frozen set: `routes` the ingest routes attacks go to (null: each attack's
 * own and the textbook route), `bombCodecs` (every one this Node makes and decodes unless given).
 */
export function normalizeHostileOptions (values = {}) {
  const quick = values.quick === true
  const out = { ...(quick ? QUICK : FULL), quick }
  for (const [flag, [key, kind]] of Object.entries(FLAGS)) {
    if (values[flag] !== undefined) out[key] = parseFlag(flag, kind, values[flag])
  }
  const sse = out.sseIntervalMs
  if (!(sse >= 10 && sse <= 60_000)) throw new TypeError(`--sse-interval takes 10 to 60000 ms, got ${sse}`)
  if (out.recordBytes < 16) throw new TypeError(`--record-bytes must be at least 16 bytes, got ${out.recordBytes}`)
  out.attacks = readAttacks(values.attacks ?? 'all')
  out.routes = values.routes === undefined ? null : readRoutes(values.routes)
  out.bombCodecs = readBombCodecs(values['bomb-codecs'] ?? BOMB_CODECS.filter(bombCodecAvailable).join(','))
  const serverFlags = values['server-flag'] ?? []
  for (const flag of serverFlags) {
    if (!String(flag).startsWith('--')) throw new TypeError(`--server-flag takes server.js flags (--memory-limit=512MiB), got "${flag}"`)
    if (/^--(port|host)(=|$)/.test(flag)) throw new TypeError(`--server-flag ${flag}: the bench chooses the port and host itself`)
  }
  out.serverFlags = [...serverFlags]
  return Object.freeze(out)
}

function parseFlag (flag, kind, text) {
  if (kind === 'bytes') {
    try {
      const bytes = parseByteSize(text)
      if (bytes >= 1) return bytes
    } catch {
      // reworded below, naming the flag
    }
    throw new TypeError(`--${flag} takes a byte size such as 20MB or 15.5MiB, got "${text}"`)
  }
  if (kind === 'ms') return parseDuration(flag, text)
  const n = Number(text)
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1) throw new TypeError(`--${flag} takes a positive integer, got "${text}"`)
  return n
}

function parseDuration (flag, text) {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(String(text).trim())
  const ms = match === null ? NaN : Math.round(Number(match[1]) * { ms: 1, s: 1000, m: 60_000 }[match[2] ?? 's'])
  if (!(ms >= 1 && ms <= 3_600_000)) throw new TypeError(`--${flag} takes a duration such as 10s, 50ms or 2m, got "${text}"`)
  return ms
}

/** The names comma-separated `text` chooses of `known` (a route's leading / dropped), in known's order. */
function chosen (flag, text, known, what) {
  const wanted = list(String(text), function name (s) {
    const named = s.replace(/^\//, '')
    if (!known.includes(named)) throw new TypeError(`--${flag} takes ${known.join(', ')}; got "${named}"`)
    return named
  })
  if (wanted.length === 0) throw new TypeError(`--${flag} names no ${what}`)
  return known.filter(function kept (name) { return wanted.includes(name) })
}

/** Ingest routes, in the order tables show them. */
function readRoutes (text) {
  return chosen('routes', text, INGEST_ROUTE_NAMES, 'route')
}

/** Codecs, in BOMB_CODECS's order: zstd only on a Node whose zlib has it. */
function readBombCodecs (text) {
  const codecs = chosen('bomb-codecs', text, BOMB_CODECS, 'codec')
  for (const codec of codecs) {
    if (!bombCodecAvailable(codec)) {
      throw new TypeError(`--bomb-codecs ${codec}: this Node (${process.versions.node}) has no ${codec} in zlib (Node 22.15 and later)`)
    }
  }
  return codecs
}

/** `all`, attack ids, or group numbers (1 to 9), comma-separated; run in the registry's order. */
function readAttacks (text) {
  const wanted = new Set()
  for (const item of list(String(text), String)) {
    if (item === 'all') for (const id of ATTACK_IDS) wanted.add(id)
    else if (ATTACK_GROUPS[item]) for (const id of ATTACK_GROUPS[item]) wanted.add(id)
    else if (ATTACK_IDS.includes(item)) wanted.add(item)
    else throw new TypeError(`--attacks takes all, 1 to 9 or ${ATTACK_IDS.join(', ')}; got "${item}"`)
  }
  if (wanted.size === 0) throw new TypeError('--attacks names no attack')
  return ATTACK_IDS.filter(function chosen (id) { return wanted.has(id) })
}
