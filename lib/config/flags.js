/**
 * server.js's flags as data: each flag's option, how its text is read, its group and its meaning.
 * `server.js` builds its `parseArgs` options, its options object and both help texts from this
 * table; test/server-flags.test.js holds docs/api.md's flag tables to it, and
 * test/docs-defaults.test.js reads the flag -> option map from it.
 *
 * No default is written here. A flag names its option by its path in the supervisor's options
 * (`port`, `restartBackoffMs`, and the app's under `app.`: `app.limits.record`), and the help
 * texts read each default from the defaults tree the caller hands in: the supervisor's
 * SUPERVISOR_DEFAULTS with the app's DEFAULTS under `app`, and beside them the groups the app hands on
 * (`server`, `metrics`, `upload`, `database`). Those live in folders this one may not import
 * (lib/README.md), so server.js puts the tree together.
 */
import { formatMemory, parseByteSize } from '../util/units.js'
import { wrapWords } from '../util/wrap.js'

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB

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

/**
 * A duration as the flags take one: `500ms`, `10s`, `2m`; a bare number is seconds.
 * @param {string} text
 * @param {string} flag named in the error
 * @returns {number} ms
 * @throws {TypeError} for anything else
 */
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
    if (!/^[1-9]\d{0,8}$/.test(text) || Number(text) > row.max) throw new TypeError(`${flag} takes a whole number from 1 to ${row.max}, got "${text}"`)
    return Number(text)
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

/** A flag's row; `sets` is what a switch gives its option. */
function flag (name, row) {
  return Object.freeze({ name, arg: null, env: null, short: null, ...row })
}

/**
 * Every flag server.js takes, by group. `option` is its path in the supervisor's options (null for
 * the help flags); `kind` how its text is read (a READERS name), or `switch` with the value it `sets`;
 * `said` gives a default that depends on the machine, or is not a figure, in words.
 */
export const FLAGS = Object.freeze([
  flag('port', { arg: 'N', env: 'PORT', option: 'port', kind: 'port', group: 'everyday', help: 'port to listen on; 0: a free one' }),
  flag('host', { arg: 'ADDRESS', env: 'HOST', option: 'host', kind: 'text', group: 'everyday', help: 'address to bind' }),
  flag('memory-limit', {
    arg: 'SZ',
    option: 'memoryLimit',
    kind: 'size',
    group: 'everyday',
    help: 'the worker\'s memory budget: past it the worker is killed and restarted, as a container\'s would be; 0: none',
    said: function quarterOfMemory (value) { return `a quarter of this machine's memory, at least 1 GiB; here: ${formatMemory(value)}` }
  }),
  flag('unsafe-bad', { option: 'app.unsafeBad', kind: 'switch', sets: true, group: 'everyday', help: '/bad with no inflate limit, so a bomb kills the worker (needs a budget)' }),
  flag('limit-compressed', { arg: 'SZ', option: 'app.limits.compressed', kind: 'size', group: 'everyday', help: 'largest compressed body of /bad, /good and /express-json' }),
  flag('limit-inflated', { arg: 'SZ', option: 'app.limits.inflated', kind: 'size', group: 'everyday', help: 'largest inflated body of /bad, /good and /express-json' }),
  flag('parse-threads', {
    arg: 'N',
    option: 'app.parseThreads',
    kind: 'integer',
    group: 'everyday',
    help: 'threads that parse /good\'s batches',
    said: function cores () { return 'the cores, at most 4' }
  }),
  flag('allowed-hosts', {
    arg: 'LIST',
    env: 'STREAMLAB_ALLOWED_HOSTS',
    option: 'app.guard.allowedHosts',
    kind: 'list',
    group: 'everyday',
    help: 'host names to answer besides localhost and IP addresses; .example.com for a domain, all for any'
  }),
  flag('access-token', {
    arg: 'TOKEN',
    env: 'STREAMLAB_TOKEN',
    option: 'app.guard.accessToken',
    kind: 'text',
    group: 'everyday',
    help: 'the token other machines need to make changes',
    said: function randomBeyondLoopback () { return 'random beyond loopback, printed' }
  }),
  flag('database-url', {
    arg: 'URL',
    env: 'DATABASE_URL',
    option: 'app.database.url',
    kind: 'url',
    group: 'everyday',
    help: 'PostgreSQL for /db',
    said: function embedded () { return 'the embedded PGlite' }
  }),
  flag('help', { short: 'h', option: null, kind: 'help', group: 'everyday', help: 'these everyday flags' }),
  flag('help-all', { option: null, kind: 'help', group: 'everyday', help: 'every flag, by group' }),

  flag('limit-record', { arg: 'SZ', option: 'app.limits.record', kind: 'size', group: 'limits', help: 'largest single record /good gathers for a parse thread' }),
  flag('buffer-budget', { arg: 'SZ', option: 'app.ingest.bufferBudget', kind: 'size', group: 'limits', help: 'inflate and parse buffers /good may hold across all requests' }),
  flag('decoder-budget', { arg: 'SZ', option: 'app.ingest.decoderBudget', kind: 'size', group: 'limits', help: 'decoder windows (brotli, zstd, zlib) the streaming routes may hold across all requests; the rest wait' }),
  flag('parse-cost', { arg: 'SZ', option: 'app.ingest.parseCost', kind: 'size', group: 'limits', help: 'heap one parse of /good\'s may be projected to take; a denser record gets 413 record.too.dense' }),
  flag('body-idle-timeout', { arg: 'T', option: 'app.limits.bodyIdleMs', kind: 'duration', group: 'limits', help: 'a body that sends nothing this long gets 408; 0: no limit' }),
  flag('min-body-rate', { arg: 'SZ', option: 'app.limits.minBodyRate', kind: 'size', group: 'limits', help: 'bytes/s a body must average over 10 s of reading, else 408; 0: none' }),
  flag('max-connections', { arg: 'N', option: 'app.server.maxConnections', kind: 'count', max: 1_000_000, group: 'limits', help: 'open connections; past it a new one gets 503 and is closed' }),
  flag('max-metrics-streams', { arg: 'N', option: 'app.metrics.maxClients', kind: 'count', max: 100_000, group: 'limits', help: 'GET /metrics streams at once; past it, 503' }),
  flag('disk-quota', { arg: 'SZ', option: 'app.diskQuota', kind: 'size', group: 'limits', help: 'bytes the lab may keep in test-data/ (uploads, saves); past it, 507' }),

  flag('no-memory-limit', { option: 'memoryLimit', kind: 'switch', sets: 0, group: 'supervisor', help: 'no memory budget: the same as --memory-limit 0' }),
  flag('restart-backoff', { arg: 'T', option: 'restartBackoffMs', kind: 'duration', group: 'supervisor', help: 'the first delay: 250ms, 2s; a bare number is seconds' }),
  flag('max-restart-backoff', { arg: 'T', option: 'maxRestartBackoffMs', kind: 'duration', group: 'supervisor', help: 'the longest delay' }),
  flag('restart-window', { arg: 'T', option: 'restartWindowMs', kind: 'duration', group: 'supervisor', help: 'a worker up this long starts the delays again' }),

  flag('share-parse', {
    arg: 'MODE',
    option: 'app.ingest.shareParse',
    kind: 'text',
    group: 'design',
    help: 'where /good parses a small body\'s document past 16 KiB: busy (on an idle parse thread while ' +
      'requests wait for the main thread), always (on an idle one), never (on the main thread)'
  }),
  flag('queue-timeout', {
    arg: 'T',
    option: 'app.ingest.queueMs',
    kind: 'duration',
    group: 'design',
    help: 'how long a queued /good request waits on a stuck queue (no pipeline free, none on course to ' +
      'end within sixty of these) before 503'
  }),

  flag('malloc-mmap-threshold', { arg: 'SZ', option: 'mallocMmapThreshold', kind: 'size', group: 'plumbing', help: 'the worker\'s glibc mallocs this large are unmapped when freed; 0: glibc\'s rising threshold' }),
  flag('no-request-peak', { option: 'app.resetPeakPerRequest', kind: 'switch', sets: false, group: 'plumbing', help: 'never reset the kernel\'s peak RSS per request (for external measurement)' }),
  flag('allocation-sampling', {
    arg: 'MODE',
    option: 'app.metrics.allocationSampling',
    kind: 'text',
    group: 'plumbing',
    help: 'when the lines that allocate and hold memory are sampled: experiment (while one runs, or a stream asks), always (while anybody watches), off'
  }),
  flag('keep-runs', { arg: 'N', option: 'app.runs.keep', kind: 'integer', group: 'plumbing', help: 'run records kept in test-data/runs/, the oldest removed past it; 0: none written' }),
  flag('upload-max-age', { arg: 'T', option: 'app.upload.maxAgeMs', kind: 'duration', group: 'plumbing', help: 'at start, remove uploads older than this: 60m, 90s; 0 keeps them' })
])

/**
 * The `options` `parseArgs` takes for these flags.
 * @returns {Record<string, { type: 'string'|'boolean', short?: string }>}
 */
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
 * The options the given flags (and, where a flag has one, its environment variable) set: a
 * partial supervisor options object with the app's under `app`. A flag wins over its variable.
 * @param {Record<string, string|boolean|undefined>} values what `parseArgs` gave
 * @param {Record<string, string|undefined>} env
 * @returns {{ app: object } & Record<string, unknown>}
 * @throws {TypeError} for a value its flag cannot take
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
  for (const [unit, size] of [['GiB', GiB], ['MiB', MiB], ['KiB', KiB]]) if (bytes !== 0 && bytes % size === 0) return `${bytes / size}${unit}`
  return String(bytes)
}

/** A duration as a flag takes it: `60m`, `2m`, `60s`, `250ms`. */
function durationText (ms) {
  if (ms >= 2 * 60_000 && ms % 60_000 === 0) return `${ms / 60_000}m`
  if (ms % 1000 === 0) return `${ms / 1000}s`
  return `${ms}ms`
}

/**
 * A flag's default as the help texts and docs/api.md say it: as the flag would take it (`512MiB`,
 * `10s`), in words where it depends on the machine, or null where there is none to say (a switch).
 * @param {object} row one of FLAGS
 * @param {object} defaults the defaults tree (see the top of this file)
 * @returns {string|null}
 */
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

/**
 * The usage: `--help` gives the everyday flags, `--help-all` every flag by group.
 * @param {object} defaults the defaults tree (see the top of this file)
 * @param {{ all?: boolean }} [how]
 * @returns {string}
 */
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
