// The app options' database member: frozen defaults, normalised into a new object. With a url the lab talks
// to that PostgreSQL server; without one it starts an embedded one (PGlite) on demand.
import path from 'node:path'
import { SEED_DEFAULTS, normalizeSeedSizes } from './seed.js'
import { integerOptions } from '../config/integers.js'

/** PGlite's own spelling for "keep it in memory" (tests use it). */
export const IN_MEMORY = 'memory://'

export const DATABASE_DEFAULTS = Object.freeze({
  /** `postgres://user:password@host:port/database`: a real server. null: the embedded PGlite. */
  url: null,
  /** Embedded only: where PGlite keeps its files (default `<dataDir>/pglite`), or 'memory://'. */
  pgliteDir: null,
  /** Connections in the pool, real PostgreSQL only; the embedded one gets 1 (docs/db-export.md). */
  poolMax: 10,
  /** How long a request waits to connect, or for a pooled connection, before a 503. */
  connectTimeoutMs: 10_000,
  /** Embedded only: how long PGlite may take to start (a first start runs initdb: seconds, docs/db-export.md). */
  startTimeoutMs: 120_000,
  /** Seeded on first use when the tables are absent; false: never (then run `npm run db:seed`). */
  seed: SEED_DEFAULTS,
  /** Largest `limit` one export request may ask for. */
  maxRows: 10_000_000
})

const checkInteger = integerOptions('option database.')

function checkUrl (url) {
  if (url === null || url === undefined) return null
  let parsed
  try {
    parsed = typeof url === 'string' ? new URL(url) : null
  } catch {
    parsed = null
  }
  if (parsed === null || (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')) {
    const given = JSON.stringify(redactUrl(url))
    throw new TypeError(`option database.url must be a postgres:// or postgresql:// URL (or null for the embedded database), got ${given}`)
  }
  return url
}

/** Normalise `options.database` (the app's `dataDir` gives the default PGlite directory); a TypeError names the member. */
export function normalizeDatabaseOptions (database = {}, app) {
  if (database === null || typeof database !== 'object' || Array.isArray(database)) {
    throw new TypeError('option database must be an object, e.g. { url: "postgres://..." }')
  }
  const known = Object.keys(DATABASE_DEFAULTS)
  for (const key of Object.keys(database)) {
    if (!known.includes(key)) throw new TypeError(`option database.${key} is unknown: try ${known.join(', ')}`)
  }
  const given = { ...DATABASE_DEFAULTS, ...database }
  const url = checkUrl(given.url)
  const kind = url === null ? 'embedded' : 'postgres'
  if (given.pgliteDir !== null && (typeof given.pgliteDir !== 'string' || given.pgliteDir === '')) {
    throw new TypeError(`option database.pgliteDir must be a directory or "${IN_MEMORY}", got ${given.pgliteDir}`)
  }
  const pgliteDir = kind === 'postgres'
    ? null
    : (given.pgliteDir === IN_MEMORY ? IN_MEMORY : path.resolve(given.pgliteDir ?? path.join(app.dataDir, 'pglite')))
  const poolMax = checkInteger('poolMax', given.poolMax, 1, 1000)
  if (kind === 'embedded' && database.poolMax !== undefined && poolMax !== 1) {
    throw new TypeError('option database.poolMax must be 1 for the embedded database (no database.url): ' +
      'pglite-socket serves one session, and cursors on a second, multiplexed connection break')
  }
  let seed = false
  if (given.seed !== false) {
    if (given.seed === null || typeof given.seed !== 'object') {
      throw new TypeError('option database.seed must be { desks, items } or false')
    }
    seed = Object.freeze(normalizeSeedSizes({ ...SEED_DEFAULTS, ...given.seed }, 'database.seed.'))
  }
  return Object.freeze({
    url,
    kind,
    pgliteDir,
    poolMax: kind === 'embedded' ? 1 : poolMax,
    connectTimeoutMs: checkInteger('connectTimeoutMs', given.connectTimeoutMs, 100, 600_000),
    startTimeoutMs: checkInteger('startTimeoutMs', given.startTimeoutMs, 1000, 3_600_000),
    seed,
    maxRows: checkInteger('maxRows', given.maxRows, 1, 100_000_000)
  })
}

/** A connection string fit to show: the password replaced. */
export function redactUrl (url) {
  if (typeof url !== 'string') return String(url)
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    // not a URL: it may still hold a password, so show only its start
    return url.length > 12 ? `${url.slice(0, 12)}…` : url
  }
}
