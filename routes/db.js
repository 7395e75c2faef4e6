/**
 * The database export, two ways, and the database's state:
 *
 *   GET /db/batch?offset&limit[&sleep]                     one page, buffered, as a JSON array
 *   GET /db/stream?limit[&offset&highWaterMark&sleep&format] every row through a cursor, streamed
 *   GET /db/status                                         pool, embedded process, seed, exports in flight
 *
 * The mechanics live in lib/db/.
 */
import { once } from 'node:events'
import { performance } from 'node:perf_hooks'
import { pipeline } from 'node:stream/promises'
import express from 'express'
import { databaseUnavailable } from '../lib/errors/index.js'
import { writes } from '../lib/limits/request-guard.js'
import {
  NDJSON_TYPE, createRowEncoder, fetchBatch, normalizeExportQuery, openRowStream, pause
} from '../lib/db/export.js'

/** Exports shown in /db/status once they have ended. */
const RECENT_KEPT = 10
/** How long a cursor may take to close (the fetch in flight finishes first). */
const CURSOR_CLOSE_MS = 10_000

/** Bytes one batch row holds at the peak, rounded up: pg's row object, its share of the JSON and the Buffer. */
const BATCH_ROW_BYTES = 1024

/** The /db routes; a batch is reserved within the memory budget of `admission`. */
export function databaseRoutes (dbOpts, database, admission) {
  const router = express.Router({ caseSensitive: true, strict: true })
  /** exports in flight, and the last few that ended: what a teacher watches in /db/status */
  const active = new Set()
  const recent = []
  let nextId = 1

  function track (mode, params) {
    const record = {
      id: nextId++,
      mode,
      format: params.format,
      offset: params.offset,
      limit: params.limit,
      highWaterMark: params.highWaterMark,
      rows: 0,
      bytes: 0,
      maxBufferedBytes: 0,
      maxBufferedRows: 0,
      startedAt: Date.now(),
      ms: null,
      outcome: null
    }
    active.add(record)
    return record
  }

  function untrack (record, outcome) {
    record.outcome = outcome
    record.ms = Date.now() - record.startedAt
    active.delete(record)
    recent.unshift(record)
    recent.length = Math.min(recent.length, RECENT_KEPT)
  }

  // an export holds memory and a connection, and starts the database: the guard's write rules apply
  router.get('/db/batch', writes(), async function exportBatch (req, res) {
    const params = normalizeExportQuery(req.query, dbOpts)
    // the whole page as rows, then as one JSON string, then as the Buffer sent: reserved before the query
    const reservation = admission?.enabled
      ? admission.reserve(params.limit * BATCH_ROW_BYTES, { route: 'db/batch', what: `a batch of ${params.limit} rows` })
      : null
    try {
      await answerBatch(req, res, params)
    } finally {
      reservation?.release()
    }
  })

  async function answerBatch (req, res, params) {
    const client = await database.acquire()
    const record = track('batch', params)
    const started = performance.now()
    let rows
    try {
      await pause(client, params.sleep)
      rows = await fetchBatch(client, params)
    } catch (err) {
      client.release(err)
      untrack(record, 'error')
      throw queryFailed(err, database)
    }
    client.release()
    const queryMs = performance.now() - started
    // wasteful by design: the whole page is in memory, then stringified whole, before a byte is sent
    const body = JSON.stringify(rows)
    record.rows = rows.length
    record.bytes = Buffer.byteLength(body)
    untrack(record, 'done')
    res.set({
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      'Server-Timing': `db;dur=${queryMs.toFixed(1)}`
    }).send(body)
  }

  router.get('/db/stream', writes(), async function exportStream (req, res) {
    const params = normalizeExportQuery(req.query, dbOpts, { stream: true, accept: req.get('accept') ?? '' })
    const client = await database.acquire()
    const record = track('stream', params)
    // pg-query-stream waits for the database to confirm a closed cursor, and a database that died
    // never does: its stream would never end. The connection's end is watched instead.
    const lost = watchConnection(client, dbOpts.kind)
    let rows = null
    let failure = null
    try {
      try {
        await Promise.race([pause(client, params.sleep), lost.promise])
      } catch (err) {
        failure = err
        throw queryFailed(err, database)
      }
      rows = openRowStream(client, params)
      const encoder = createRowEncoder(params.format, {
        onChunk: function watchBuffers (enc) {
          record.rows = enc.rows
          record.bytes = enc.bytes
          // bytes encoded but not yet in the kernel: the encoder's, the response's and its socket's
          const bytes = enc.readableLength + enc.pendingBytes() + res.writableLength
          const buffered = rows.readableLength + enc.writableLength
          if (bytes > record.maxBufferedBytes) record.maxBufferedBytes = bytes
          if (buffered > record.maxBufferedRows) record.maxBufferedRows = buffered
        }
      })
      try {
        // headers wait for the first rows, so that a query that fails at once still gets its JSON error
        await Promise.race([once(rows, 'readable'), lost.promise])
      } catch (err) {
        failure = err
        throw queryFailed(err, database)
      }
      res.set({
        'Content-Type': params.format === 'ndjson' ? `${NDJSON_TYPE}; charset=utf-8` : 'application/json; charset=utf-8',
        'Cache-Control': 'no-store'
      })
      try {
        await Promise.race([pipeline(rows, encoder, res), lost.promise])
        record.rows = encoder.rows
        record.bytes = encoder.bytes
        untrack(record, 'done')
      } catch (err) {
        record.rows = encoder.rows
        if (err.code === 'ERR_STREAM_PREMATURE_CLOSE' && lost.error === null) {
          // the client hung up: pipeline destroyed the cursor's stream, which closes the cursor
          untrack(record, 'client closed')
          return
        }
        failure = err
        encoder.destroy()
        // headers are out: the error handler can only cut the connection, which tells the client
        throw err
      }
    } finally {
      lost.stop()
      if (active.has(record)) untrack(record, 'error')
      // the cursor's Close and Sync must be answered before anyone else gets this connection;
      // a connection that died never answers, and is destroyed rather than pooled
      const closed = lost.error === null && (rows === null || rows.closed || await closedWithin(rows, CURSOR_CLOSE_MS))
      client.release(failure ?? lost.error ?? (closed ? undefined : new Error('the cursor did not close')))
    }
  })

  router.get('/db/status', function databaseStatus (req, res) {
    res.set('Cache-Control', 'no-store').json({
      ...database.status(),
      exports: { active: [...active].map(copy), recent: recent.map(copy) }
    })
  })

  return router
}

/** A promise that rejects (503 database.unavailable, naming `kind`) when the connection ends; `stop()` forgets it. */
function watchConnection (client, kind) {
  const watch = { error: null, promise: null, stop: null }
  let onEnd
  watch.promise = new Promise(function waitForEnd (resolve, reject) {
    onEnd = function connectionEnded () {
      watch.error = databaseUnavailable({ database: kind, when: 'export' })
      reject(watch.error)
    }
    client.once('end', onEnd)
  })
  // nobody may be racing it when the connection ends
  watch.promise.catch(function handled () {})
  watch.stop = function stopWatching () { client.off('end', onEnd) }
  return watch
}

/** Whether `stream` emits 'close' within `ms`. */
function closedWithin (stream, ms) {
  return new Promise(function waitForClose (resolve) {
    const timer = setTimeout(function gaveUp () {
      stream.off('close', onClose)
      resolve(false)
    }, ms)
    function onClose () {
      clearTimeout(timer)
      resolve(true)
    }
    stream.once('close', onClose)
  })
}

function copy (record) {
  return { ...record }
}

/** A failed query: the database went away (503, in words fit for a client), or something unexpected (500). */
function queryFailed (err, database) {
  if (err.status) return err
  const connectionLost = /terminat|ECONNRESET|EPIPE|Connection terminated|closed/i.test(`${err.code} ${err.message}`)
  if (connectionLost || err.code === '57P01' || err.code === '57P03') {
    const detail = database.publicText(err.message)
    return databaseUnavailable({ database: database.kind, when: 'query', cause: err.code ?? detail, detail })
  }
  return err
}
