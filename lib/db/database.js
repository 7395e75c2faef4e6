// The lab's database handle: a pg Pool on a real PostgreSQL server or on the embedded PGlite, started on
// demand; down or failed, 503 and tried again next request. What clients are told of it: README.md.
import pg from 'pg'
import { databaseBusy, databaseNotSeeded, databaseUnavailable } from '../errors/index.js'
import { readProcMemory } from '../metrics/proc-memory.js'
import { startEmbedded } from './embedded.js'
import { MECHANISM } from './scram-gate.js'
import { IN_MEMORY, redactUrl } from './options.js'
import { readSeed, seedDatabase } from './seed.js'

/** Refused, or no socket there: what a connection to an embedded database that died sees. */
const EMBEDDED_GONE = new Set(['ECONNREFUSED', 'ENOENT'])
/** Paths on disk (POSIX, or Windows' C:\...) in an error's text. */
const ABSOLUTE_PATH = /(?<![\w.:/\\>])(?:\/[^\s/'"`:,;()]+(?:\/[^\s/'"`:,;()]*)*|[A-Za-z]:\\[^\s'"`:,;()]*)/g
const LOOPBACK_PORT = /\b127\.0\.0\.1:\d+/g

/** Build the handle. */
export function createDatabase (opts) {
  let state = 'stopped'
  let starting = null
  let pool = null
  let embedded = null
  let seed = null
  let seeding = null
  let lastError = null
  let closed = false

  function target () {
    if (opts.kind === 'postgres') return redactUrl(opts.url)
    return `embedded PGlite (${opts.pgliteDir === IN_MEMORY ? 'in memory' : 'on disk'})`
  }

  /** Text fit for a client: the embedded database's socket, port and paths named, never shown. */
  function publicText (text) {
    let out = String(text)
    if (opts.kind !== 'embedded') return out
    if (embedded?.transport === 'unix') out = out.split(embedded.connection.host).join('<socket>')
    if (opts.pgliteDir !== IN_MEMORY) out = out.split(opts.pgliteDir).join('<pgliteDir>')
    return out.replace(LOOPBACK_PORT, '127.0.0.1:<port>').replace(ABSOLUTE_PATH, '<path>')
  }

  function unavailable (err) {
    return databaseUnavailable({
      database: opts.kind, when: 'connect', cause: err.code ?? publicText(err.message), detail: publicText(err.message), target: target()
    })
  }

  async function start () {
    state = 'starting'
    lastError = null
    try {
      if (opts.kind === 'embedded') {
        embedded = await startEmbedded({ dir: opts.pgliteDir, timeoutMs: opts.startTimeoutMs })
        embedded.child.once('exit', onEmbeddedExit)
      }
      pool = new pg.Pool(opts.kind === 'embedded'
        ? {
            // a Unix socket in a private directory, or loopback TCP on Windows; a random password either way
            ...embedded.connection,
            max: 1,
            // the one connection stays: reconnecting costs PGlite a session start
            idleTimeoutMillis: 0,
            connectionTimeoutMillis: opts.connectTimeoutMs,
            allowExitOnIdle: true
          }
        : {
            connectionString: opts.url,
            max: opts.poolMax,
            idleTimeoutMillis: 10_000,
            connectionTimeoutMillis: opts.connectTimeoutMs,
            allowExitOnIdle: true
          })
      pool.on('error', onIdleClientError)
      // a connection that dies while checked out emits 'error' on its client, which the pool
      // does not listen to then: unheard, it would take the lab down (the query fails anyway)
      pool.on('connect', function listenToClient (client) {
        client.on('error', onIdleClientError)
      })
      const client = await pool.connect()
      try {
        seed = await readSeed(client)
        if (seed === null && opts.seed !== false) {
          seeding = { done: 0, total: opts.seed.desks + opts.seed.items, stage: 'desks' }
          await seedDatabase(client, opts.seed, {
            onProgress: function noteProgress (progress) { seeding = progress }
          })
          seed = await readSeed(client)
        }
      } finally {
        seeding = null
        client.release()
      }
      state = 'ready'
    } catch (err) {
      lastError = err.message
      // the client's answer leaves out paths and ports: the whole story is here
      if (opts.kind === 'embedded') console.warn(`streamlab: the embedded database could not start: ${err.message}`)
      await shutDown()
      state = 'failed'
      throw err
    }
  }

  function onEmbeddedExit (code, signal) {
    if (closed || state === 'stopped') return
    // crashed or killed: the next request starts a fresh one
    const lastWords = embedded?.stderr() ? `: ${embedded.stderr().trim().slice(-500)}` : ''
    lastError = `PGlite exited (${signal ?? code})${lastWords}`
    console.warn(`streamlab: the embedded database (pid ${embedded?.pid}) exited (${signal ?? code})${lastWords}; ` +
      'the next /db request starts it again')
    embedded = null
    state = 'failed'
    const old = pool
    pool = null
    starting = null
    old?.end().catch(function ignoreEndError () {})
  }

  function onIdleClientError (err) {
    // a connection died (server restarted, PGlite killed): the pool drops it and connects anew
    lastError = err.message
  }

  async function shutDown () {
    const oldPool = pool
    const oldEmbedded = embedded
    pool = null
    embedded = null
    if (oldPool) {
      oldPool.off('error', onIdleClientError)
      await oldPool.end().catch(function ignoreEndError () {})
    }
    if (oldEmbedded) {
      oldEmbedded.child.off('exit', onEmbeddedExit)
      await oldEmbedded.stop()
    }
  }

  /** The pool, started (and seeded) if it was not. */
  async function ready () {
    if (closed) throw databaseUnavailable({ database: opts.kind, when: 'closed' })
    if (state === 'ready' && pool !== null) return pool
    starting ??= start().finally(function startSettled () {
      if (state !== 'ready') starting = null
    })
    try {
      await starting
    } catch (err) {
      throw err.status ? err : unavailable(err)
    }
    return pool
  }

  return Object.freeze({
    /** 'embedded' or 'postgres'. */
    kind: opts.kind,

    /** A pool connection for one request (`client.release(err)` if it may be broken); 503 when there is none. */
    acquire: async function acquire (retried = false) {
      const current = await ready()
      let client
      try {
        client = await current.connect()
      } catch (err) {
        if (opts.kind === 'embedded' && EMBEDDED_GONE.has(err.code) && !retried) {
          // PGlite died (ECONNREFUSED, or ENOENT: its socket's directory went with it): start a fresh one, once.
          // Its 'exit' may come after the refusal on a busy machine: whichever is first puts the old one away
          if (current === pool) {
            lastError = `PGlite stopped answering: ${err.message}`
            state = 'failed'
            starting = null
            await shutDown()
          }
          return acquire(true)
        }
        if (/timeout exceeded/.test(err.message) && current.totalCount >= opts.poolMax) {
          throw databaseBusy(opts.kind, opts.poolMax, opts.connectTimeoutMs)
        }
        throw unavailable(err)
      }
      if (seed === null) {
        // seeded since (npm run db:seed on a real server)? Look again before refusing
        try {
          seed = await readSeed(client)
        } catch (err) {
          client.release(err)
          throw unavailable(err)
        }
        if (seed === null) {
          client.release()
          throw databaseNotSeeded(opts.kind)
        }
      }
      return client
    },

    /** What GET /db/status shows, without a connection: how the embedded database is reached, never where. */
    status: function status () {
      const memory = embedded ? readProcMemory(embedded.pid) : null
      return {
        kind: opts.kind,
        state,
        target: target(),
        pool: pool === null
          ? null
          : { max: opts.poolMax, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount },
        embedded: opts.kind === 'embedded'
          ? {
              pid: embedded?.pid ?? null,
              storage: opts.pgliteDir === IN_MEMORY ? 'memory' : 'disk',
              transport: embedded?.transport ?? null,
              auth: embedded ? MECHANISM : null,
              rss: memory?.rss ?? null,
              peakRss: memory?.peak ?? null
            }
          : null,
        seed: seed === null ? null : { desks: seed.desks, items: seed.items, seededAt: seed.seededAt },
        seeding,
        error: lastError === null ? null : publicText(lastError)
      }
    },

    /** A database error's text as a client may see it (routes/db.js). */
    publicText,

    /** `pg` options for the running embedded database, password included: for this process's tools and specs only. */
    embeddedConnection: function embeddedConnection () {
      return embedded?.connection ?? null
    },

    /** The embedded database's process id (null until it runs, or for a real server). */
    embeddedPid: function embeddedPid () {
      return embedded?.pid ?? null
    },

    /** Close the pool and stop the embedded database. Safe to call twice. */
    close: async function close () {
      closed = true
      try {
        await starting
      } catch {
        // a start that failed has nothing left to close
      }
      await shutDown()
      state = 'stopped'
    }
  })
}
