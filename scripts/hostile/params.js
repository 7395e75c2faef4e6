/**
 * The hostile bench's parameters: every size, count and time bound in one
 * place, frozen, with a `--quick` set beside the full one. Flags override
 * whichever set is chosen; a bad value is a TypeError naming its flag.
 */
import { BOMB_CODECS, bombCodecAvailable } from '../../lib/generate/bombs.js'
import { INGEST_ROUTE_NAMES } from '../../lib/ingest/contenders.js'
import { MiB, parseByteSize } from '../../lib/util/units.js'

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
 * Flag -> [parameter, kind, what it sets (the attack's number first)]. Kinds: count (positive integer), bytes (500MB, 15.5MiB),
 * ms (60s, 500ms, 2m; a bare number is seconds, as server.js reads durations).
 */
const FLAGS = Object.freeze({
  records: ['records', 'count', '1: records in each dense body'],
  'record-bytes': ['recordBytes', 'bytes', '1: bytes of each dense record'],
  'abandon-clients': ['abandonClients', 'count', '2: uploads that give up'],
  'abandon-concurrency': ['abandonConcurrency', 'count', '2: of them at once'],
  'abandon-bytes': ['abandonBytes', 'bytes', '2: the gzip body each declares'],
  'abandon-after': ['abandonAfterMs', 'ms', '2: when each hangs up'],
  bombs: ['bombs', 'count', '3: ratio bombs to /bad in a row, in each of --bomb-codecs'],
  'bomb-bytes': ['bombBytes', 'bytes', '3: what each inflates to (450MB: 445 KB sent)'],
  'bad-bytes': ['badBytes', 'bytes', '3: the generated document sent through /bad'],
  uploads: ['uploads', 'count', '4: uploads to /upload-buffer at once'],
  'upload-bytes': ['uploadBytes', 'bytes', '4: each'],
  'batch-limit': ['batchLimit', 'count', '5: rows asked of GET /db/batch'],
  'batch-timeout': ['batchTimeoutMs', 'ms', '5: client timeout'],
  drips: ['drips', 'count', '6: clients sending a byte at a time'],
  'drip-every': ['dripEveryMs', 'ms', '6: between bytes'],
  'drip-for': ['dripForMs', 'ms', '6: then they hang up'],
  'sse-clients': ['sseClients', 'count', '7: /metrics streams held open'],
  'sse-interval': ['sseIntervalMs', 'count', '7: their ?interval= in ms'],
  'sse-hold': ['sseHoldMs', 'ms', '7: how long they are held'],
  'fill-for': ['fillForMs', 'ms', '8: how long the uploads loop and the save run'],
  'fill-bytes': ['fillBytes', 'bytes', '8: each upload to /upload-stream'],
  'fill-concurrency': ['fillConcurrency', 'count', '8: uploads at once'],
  'fill-uploads': ['fillUploads', 'count', '8: uploads at most'],
  'fill-generate': ['fillGenerateBytes', 'bytes', '8: GET /generate?save=1&level=0&bytes='],
  'window-uploads': ['windowUploads', 'count', '9: valid uploads at once in each of br and zstd (of --bomb-codecs)'],
  'window-bytes': ['windowBytes', 'bytes', '9: the document each inflates to'],
  'window-bombs': ['windowBombs', 'count', '9: ratio bombs at once in each of br and zstd (--bomb-bytes each)'],
  'probe-items': ['probeItems', 'count', 'items in the normal /good request'],
  'probe-timeout': ['probeTimeoutMs', 'ms', 'its client timeout'],
  'attack-timeout': ['attackTimeoutMs', 'ms', 'the most any attack may take'],
  settle: ['settleMs', 'ms', 'how long to wait for requests in flight to reach 0'],
  'growth-bound': ['growthBound', 'bytes', 'growth allowed on attacks to /good']
})

/** The full run: a few minutes on two cores, most of it the drip's minute. */
const FULL = Object.freeze({
  records: 8,
  recordBytes: Math.round(15.5 * MiB),
  abandonClients: 200,
  abandonConcurrency: 20,
  abandonBytes: 20_000_000,
  abandonAfterMs: 50,
  bombs: 6,
  // a ratio bomb of 450 MB inflated is 445,568 bytes on the wire
  bombBytes: 450_000_000,
  badBytes: 300_000_000,
  uploads: 3,
  uploadBytes: 200_000_000,
  batchLimit: 2_000_000,
  batchTimeoutMs: 60_000,
  drips: 8,
  dripEveryMs: 10_000,
  dripForMs: 60_000,
  sseClients: 3000,
  sseIntervalMs: 100,
  sseHoldMs: 10_000,
  fillForMs: 10_000,
  fillBytes: 4_000_000,
  fillConcurrency: 4,
  fillUploads: 2000,
  fillGenerateBytes: 8_000_000_000,
  windowUploads: 16,
  windowBytes: 40_000_000,
  windowBombs: 16,
  probeItems: 1000,
  probeTimeoutMs: 30_000,
  attackTimeoutMs: 180_000,
  settleMs: 5000,
  growthBound: 64 * MiB
})

/** `--quick`: the same attacks, small enough to see every row in well under a minute. */
const QUICK = Object.freeze({
  ...FULL,
  records: 2,
  recordBytes: MiB,
  abandonClients: 20,
  abandonConcurrency: 10,
  abandonBytes: 2_000_000,
  bombs: 2,
  bombBytes: 50_000_000,
  badBytes: 20_000_000,
  uploadBytes: 10_000_000,
  batchLimit: 1000,
  batchTimeoutMs: 15_000,
  drips: 2,
  dripEveryMs: 1000,
  dripForMs: 3000,
  sseClients: 50,
  sseHoldMs: 2000,
  fillForMs: 2000,
  fillBytes: 1_000_000,
  fillConcurrency: 2,
  fillUploads: 50,
  fillGenerateBytes: 100_000_000,
  windowUploads: 4,
  windowBytes: 4_000_000,
  windowBombs: 4,
  probeItems: 100,
  probeTimeoutMs: 10_000,
  attackTimeoutMs: 60_000,
  settleMs: 3000
})

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
  return Object.entries(FLAGS).map(function line ([flag, [key, kind, text]]) {
    return `  --${flag.padEnd(20)} ${text} (default ${shown(FULL[key], kind)}, quick ${shown(QUICK[key], kind)})`
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
 * Normalise parsed flags into a new frozen object; the caller's is never changed.
 * @param {Record<string, string|boolean|string[]|undefined>} values from node:util parseArgs
 * @returns {Readonly<typeof FULL & { quick: boolean, attacks: string[], routes: string[]|null, bombCodecs: string[], serverFlags: string[] }>}
 *   `routes`: the ingest routes the attacks on them go to; null when not given (each attack's own and the textbook route);
 *   `bombCodecs`: the codecs of the ratio bombs (every one this Node makes and decodes unless given)
 * @throws {TypeError} naming the bad flag
 */
export function normalizeHostileOptions (values = {}) {
  const quick = values.quick === true
  const out = { ...(quick ? QUICK : FULL), quick }
  for (const [flag, [key, kind]] of Object.entries(FLAGS)) {
    if (values[flag] !== undefined) out[key] = parseFlag(flag, kind, values[flag])
  }
  if (out.sseIntervalMs < 10 || out.sseIntervalMs > 60_000) throw new TypeError(`--sse-interval takes 10 to 60000 ms, got ${out.sseIntervalMs}`)
  if (out.recordBytes < 16) throw new TypeError(`--record-bytes must be at least 16 bytes, got ${out.recordBytes}`)
  out.attacks = readAttacks(values.attacks ?? 'all')
  out.routes = values.routes === undefined ? null : readRoutes(values.routes)
  out.bombCodecs = readBombCodecs(values['bomb-codecs'] ?? BOMB_CODECS.filter(bombCodecAvailable).join(','))
  const serverFlags = values['server-flag'] ?? []
  for (const flag of serverFlags) {
    if (typeof flag !== 'string' || !flag.startsWith('--')) throw new TypeError(`--server-flag takes server.js flags such as --memory-limit=512MiB, got "${flag}"`)
    if (/^--(port|host)(=|$)/.test(flag)) throw new TypeError(`--server-flag ${flag}: the bench chooses the port and binds 127.0.0.1 itself`)
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

/** Ingest route names, comma-separated (bad, good, express-json, streamparser-json), in the order tables show them. */
function readRoutes (text) {
  const wanted = String(text).split(',').map(function trim (s) { return s.trim().replace(/^\//, '') }).filter(Boolean)
  for (const route of wanted) {
    if (!INGEST_ROUTE_NAMES.includes(route)) throw new TypeError(`--routes takes ${INGEST_ROUTE_NAMES.join(', ')}; got "${route}"`)
  }
  if (wanted.length === 0) throw new TypeError('--routes names no route')
  return INGEST_ROUTE_NAMES.filter(function chosen (route) { return wanted.includes(route) })
}

/** Codecs, comma-separated, in BOMB_CODECS's order: zstd only on a Node whose zlib has it. */
function readBombCodecs (text) {
  const wanted = String(text).split(',').map(function trim (s) { return s.trim() }).filter(Boolean)
  for (const codec of wanted) {
    if (!BOMB_CODECS.includes(codec)) throw new TypeError(`--bomb-codecs takes ${BOMB_CODECS.join(', ')}; got "${codec}"`)
    if (!bombCodecAvailable(codec)) throw new TypeError(`--bomb-codecs ${codec}: this Node (${process.versions.node}) has no ${codec} in zlib (Node 22.15 and later)`)
  }
  if (wanted.length === 0) throw new TypeError('--bomb-codecs names no codec')
  return BOMB_CODECS.filter(function chosen (codec) { return wanted.includes(codec) })
}

/** `all`, attack ids, or group numbers (1 to 9), comma-separated; run in the registry's order. */
function readAttacks (text) {
  const wanted = new Set()
  for (const item of String(text).split(',').map(function trim (s) { return s.trim() }).filter(Boolean)) {
    if (item === 'all') for (const id of ATTACK_IDS) wanted.add(id)
    else if (ATTACK_GROUPS[item]) for (const id of ATTACK_GROUPS[item]) wanted.add(id)
    else if (ATTACK_IDS.includes(item)) wanted.add(item)
    else throw new TypeError(`--attacks takes all, 1 to 9 or ${ATTACK_IDS.join(', ')}; got "${item}"`)
  }
  if (wanted.size === 0) throw new TypeError('--attacks names no attack')
  return ATTACK_IDS.filter(function chosen (id) { return wanted.has(id) })
}
