// server.js's flags as data: each flag's option, how its text is read, its group and its meaning; server.js
// builds its parseArgs options and help texts from it. No default is written here: README.md says why.
import { GiB, KiB, MiB, formatMemory, parseByteSize } from '../util/units.js'
import { wrapWords } from '../util/wrap.js'

/** The width `--help` and `--help-all` fit in, and the column their meanings start at. */
const HELP_WIDTH = 100
const MEANING_COLUMN = 25

/**
 * The groups, in the order `--help-all` and docs/api.md give them. `everyday` is what `--help` shows:
 * the knobs a lesson, an exercise or a class's shared lab sets.
 */
export const FLAG_GROUPS = Object.freeze([
  Object.freeze({ key: 'everyday', name: 'Everyday', about: 'the knobs a lesson or an exercise sets' }),
  Object.freeze({ key: 'limits', name: 'Limits', about: 'each is answered (408, 413, 503 or 507, as JSON), none drops the connection' }),
  Object.freeze({ key: 'supervisor', name: 'The supervisor', about: 'it never gives up. A crash a request caused is restarted at once; ' +
    'one with no request in flight at once, then after a delay that doubles' }),
  Object.freeze({ key: 'design', name: 'Design comparisons', about: 'switches that exist to compare two designs of /good ' +
    '(docs/ingest.md, docs/limits.md), not to tune a lab' }),
  Object.freeze({ key: 'plumbing', name: 'Measurement and housekeeping', about: 'for the benches and the experiments' })
])

/** A duration in ms from `500ms`, `10s`, `2m`, or a bare number of seconds; a TypeError names `flag`. */
function parseDuration (text, flag) {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(String(text).trim())
  if (match === null) throw new TypeError(`${flag} takes a duration like 60s, 2m or 500ms, got "${text}"`)
  const unit = { ms: 1, s: 1000, m: 60_000 }[match[2] ?? 's']
  return Math.round(Number(match[1]) * unit)
}

/**
 * How a flag's text becomes its option's value. Each names the flag in its error where the
 * option's own normaliser would not (a size's error quotes the text, which is enough).
 */
const READERS = Object.freeze({
  size: function readSize (text) { return parseByteSize(text) },
  duration: parseDuration,
  /** a number the option's normaliser checks (`option parseThreads must be an integer from 1 to 64`) */
  integer: function readInteger (text) { return Number(text) },
  /** a cap checked here: its normaliser runs in the worker, too late for a usage error */
  count: function readCount (text, flag, row) {
    if (/^[1-9]\d{0,8}$/.test(text) && Number(text) <= row.max) return Number(text)
    throw new TypeError(`${flag} takes a whole number from 1 to ${row.max}, got "${text}"`)
  },
  port: function readPort (text) {
    const port = Number(text)
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`port must be an integer from 0 to 65535, got ${text}`)
    return port
  },
  text: function readText (text) { return text },
  /** an empty URL is none: the embedded database */
  url: function readUrl (text) { return text === '' ? undefined : text },
  list: function readList (text) { return text.split(',').map(function trim (h) { return h.trim() }).filter(Boolean) }
})

/** The text a flag's argument is shown as, where its kind says it. */
const ARG_OF = Object.freeze({ size: 'SZ', duration: 'T', count: 'N', integer: 'N', port: 'N' })

/** A flag's row; `more` may name its `arg`, `env`, `short`, `max`, `said`, and `sets` (what a switch gives). */
function flag (name, option, kind, help, more = {}) {
  return { name, arg: ARG_OF[kind] ?? null, env: null, short: null, option, kind, help, ...more }
}

/** The rows of one group, in the order the help texts give them. */
function inGroup (group, rows) {
  return rows.map(function placed (row) { return Object.freeze({ ...row, group }) })
}

/**
 * Every flag server.js takes, by group: `option`, its path in the supervisor's options (null for help);
 * `kind`, a READERS name or `switch`; `said`, a default that depends on the machine, in words.
 */
export const FLAGS = Object.freeze([
  ...inGroup('everyday', [
    flag('port', 'port', 'port', 'port to listen on; 0: a free one', { env: 'PORT' }),
    flag('host', 'host', 'text', 'address to bind', { arg: 'ADDRESS', env: 'HOST' }),
    flag('memory-limit', 'memoryLimit', 'size',
      'the worker\'s memory budget: past it the worker is killed and restarted, as a container\'s would be; 0: none', {
        said: function quarterOfMemory (value) { return `a quarter of this machine's memory, at least 1 GiB; here: ${formatMemory(value)}` }
      }),
    flag('unsafe-bad', 'app.unsafeBad', 'switch',
      '/bad with no inflate limit, so a bomb kills the worker (needs a budget)', { sets: true }),
    flag('limit-compressed', 'app.limits.compressed', 'size', 'largest compressed body of /bad, /good and /express-json'),
    flag('limit-inflated', 'app.limits.inflated', 'size', 'largest inflated body of /bad, /good and /express-json'),
    flag('parse-threads', 'app.parseThreads', 'integer',
      'threads that parse /good\'s batches', { said: function cores () { return 'the cores, at most 4' } }),
    flag('allowed-hosts', 'app.guard.allowedHosts', 'list',
      'host names to answer besides localhost and IP addresses; .example.com for a domain, all for any', {
        arg: 'LIST', env: 'STREAMLAB_ALLOWED_HOSTS'
      }),
    flag('access-token', 'app.guard.accessToken', 'text',
      'the token other machines need to make changes', {
        arg: 'TOKEN', env: 'STREAMLAB_TOKEN',
        said: function randomBeyondLoopback () { return 'random beyond loopback, printed' }
      }),
    flag('database-url', 'app.database.url', 'url',
      'PostgreSQL for /db', { arg: 'URL', env: 'DATABASE_URL', said: function embedded () { return 'the embedded PGlite' } }),
    flag('help', null, 'help', 'these everyday flags', { short: 'h' }),
    flag('help-all', null, 'help', 'every flag, by group')
  ]),
  ...inGroup('limits', [
    flag('limit-record', 'app.limits.record', 'size', 'largest single record /good gathers for a parse thread'),
    flag('buffer-budget', 'app.ingest.bufferBudget', 'size', 'inflate and parse buffers /good may hold across all requests'),
    flag('decoder-budget', 'app.ingest.decoderBudget', 'size',
      'decoder windows (brotli, zstd, zlib) the streaming routes may hold across all requests; the rest wait'),
    flag('parse-cost', 'app.ingest.parseCost', 'size',
      'heap one parse of /good\'s may be projected to take; a denser record gets 413 record.too.dense'),
    flag('body-idle-timeout', 'app.limits.bodyIdleMs', 'duration', 'a body that sends nothing this long gets 408; 0: no limit'),
    flag('min-body-rate', 'app.limits.minBodyRate', 'size', 'bytes/s a body must average over 10 s of reading, else 408; 0: none'),
    flag('max-connections', 'app.server.maxConnections', 'count',
      'open connections; past it a new one gets 503 and is closed', { max: 1_000_000 }),
    flag('max-metrics-streams', 'app.metrics.maxClients', 'count', 'GET /metrics streams at once; past it, 503', { max: 100_000 }),
    flag('disk-quota', 'app.diskQuota', 'size', 'bytes the lab may keep in test-data/ (uploads, saves); past it, 507')
  ]),
  ...inGroup('supervisor', [
    flag('no-memory-limit', 'memoryLimit', 'switch', 'no memory budget: the same as --memory-limit 0', { sets: 0 }),
    flag('restart-backoff', 'restartBackoffMs', 'duration', 'the first delay: 250ms, 2s; a bare number is seconds'),
    flag('max-restart-backoff', 'maxRestartBackoffMs', 'duration', 'the longest delay'),
    flag('restart-window', 'restartWindowMs', 'duration', 'a worker up this long starts the delays again')
  ]),
  ...inGroup('design', [
    flag('share-parse', 'app.ingest.shareParse', 'text',
      'where /good parses a small body\'s document past 16 KiB: busy (on an idle parse thread while requests ' +
      'wait for the main thread), always (on an idle one), never (on the main thread)', { arg: 'MODE' }),
    flag('block-size', 'app.ingest.blockBytes', 'size',
      'most bytes of a block /good cuts its batches in and sends a parse thread whole (16 KiB to 64 MiB)'),
    flag('no-simd', 'app.ingest.simd', 'switch',
      '/good without its WebAssembly SIMD cutter and UTF-8 decoder: the record scanner alone', { sets: false }),
    flag('queue-timeout', 'app.ingest.queueMs', 'duration',
      'how long a queued /good request waits on a stuck queue (no pipeline free, none on course to end within sixty of these) before 503')
  ]),
  ...inGroup('plumbing', [
    flag('malloc-mmap-threshold', 'mallocMmapThreshold', 'size',
      'the worker\'s glibc mallocs this large are unmapped when freed; 0: glibc\'s rising threshold'),
    flag('no-request-peak', 'app.resetPeakPerRequest', 'switch',
      'never reset the kernel\'s peak RSS per request (for external measurement)', { sets: false }),
    flag('allocation-sampling', 'app.metrics.allocationSampling', 'text',
      'when the lines that allocate and hold memory are sampled: experiment (while one runs, or a stream ' +
      'asks), always (while anybody watches), off', { arg: 'MODE' }),
    flag('keep-runs', 'app.runs.keep', 'integer', 'run records kept in test-data/runs/, the oldest removed past it; 0: none written'),
    flag('upload-max-age', 'app.upload.maxAgeMs', 'duration', 'at start, remove uploads older than this: 60m, 90s; 0 keeps them')
  ])
])

/** The `options` `parseArgs` takes for these flags. */
export function parseArgsOptions () {
  const options = {}
  for (const row of FLAGS) {
    options[row.name] = { type: row.arg === null ? 'boolean' : 'string' }
    if (row.short !== null) options[row.name].short = row.short
  }
  return options
}

function valueAt (tree, dotted) {
  let value = tree
  for (const key of dotted.split('.')) value = value?.[key]
  return value
}

function setAt (tree, dotted, value) {
  const keys = dotted.split('.')
  let at = tree
  for (const key of keys.slice(0, -1)) at = at[key] ??= {}
  at[keys.at(-1)] = value
}

/**
 * The partial supervisor options (the app's under `app`) that parseArgs' `values` and, where a flag has one,
 * its environment variable set; a flag wins over its variable. A TypeError for a value its flag cannot take.
 */
export function optionsFromFlags (values, env) {
  const options = { app: {} }
  for (const row of FLAGS) {
    if (row.kind === 'help') continue
    const text = values[row.name] ?? (row.env === null ? undefined : env[row.env])
    if (text === undefined || text === false) continue
    const value = row.kind === 'switch' ? row.sets : READERS[row.kind](text, `--${row.name}`, row)
    if (value !== undefined) setAt(options, row.option, value)
  }
  return options
}

/** A size as a flag takes it: `512MiB`, `4KiB`, else bytes. */
function sizeText (bytes) {
  for (const [unit, size] of [['GiB', GiB], ['MiB', MiB], ['KiB', KiB]]) {
    if (bytes !== 0 && bytes % size === 0) return `${bytes / size}${unit}`
  }
  return String(bytes)
}

/** A duration as a flag takes it: `60m`, `2m`, `60s`, `250ms`. */
function durationText (ms) {
  if (ms >= 2 * 60_000 && ms % 60_000 === 0) return `${ms / 60_000}m`
  if (ms % 1000 === 0) return `${ms / 1000}s`
  return `${ms}ms`
}

/** A flag's default as the help says it (`512MiB`, `10s`, words where it depends on the machine), or null. */
function flagDefault (row, defaults) {
  if (row.option === null || row.kind === 'switch') return null
  const value = valueAt(defaults, row.option)
  if (row.said) return row.said(value)
  if (value === null || value === undefined || (Array.isArray(value) && value.length === 0)) return null
  if (row.kind === 'size') return sizeText(value)
  if (row.kind === 'duration') return durationText(value)
  return String(value)
}

/** One flag's lines: `  --name ARG` and its meaning wrapped from column 25, with its variable and default. */
function flagLines (row, defaults) {
  const head = `  ${row.short === null ? '' : `-${row.short}, `}--${row.name}${row.arg === null ? '' : ` ${row.arg}`}`
  const said = flagDefault(row, defaults)
  const notes = [row.env === null ? null : `env ${row.env}`, said === null ? null : `default ${said}`]
    .filter(Boolean).map(function unbroken (note) { return note.replace(/^(env|default) /, '$1\u00a0') })
  const meaning = notes.length === 0 ? row.help : `${row.help} (${notes.join(', ')})`
  const lines = wrapWords(meaning, HELP_WIDTH - MEANING_COLUMN)
  const first = head.length < MEANING_COLUMN - 1 ? [`${head.padEnd(MEANING_COLUMN)}${lines.shift()}`] : [head]
  return [...first, ...lines.map(function indent (l) { return `${' '.repeat(MEANING_COLUMN)}${l}` })]
}

/** The usage: `--help` gives the everyday flags, `--help-all` every flag by group (`defaults`: README.md). */
export function usage (defaults, { all = false } = {}) {
  const lines = ['Usage: node server.js [options]']
  for (const group of FLAG_GROUPS) {
    if (!all && group.key !== 'everyday') continue
    lines.push('', ...wrapWords(all ? `${group.name}: ${group.about}` : 'The everyday flags:', HELP_WIDTH))
    for (const row of FLAGS) if (row.group === group.key) lines.push(...flagLines(row, defaults))
  }
  if (!all) lines.push('', 'Every flag, by group: node server.js --help-all; each explained in docs/api.md.')
  return lines.join('\n')
}
