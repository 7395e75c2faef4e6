// Exporting the desks x items join two ways: a batch (LIMIT/OFFSET, every row in memory, one JSON array) and
// a stream (a cursor read highWaterMark rows at a time, with backpressure to the cursor). routes/db.js wires them.
import { Transform } from 'node:stream'
import QueryStream from 'pg-query-stream'
import { badParameter } from '../errors/index.js'
import { integerParam } from '../config/integers.js'

/** The one query both modes run, ordered by a unique key so that consecutive batches tile the stream exactly. */
const EXPORT_SQL = `SELECT i.id, i.sku, i.name, i.quantity, i.price_cents, i.updated_at,
  d.id AS desk_id, d.name AS desk_name, d.building, d.floor
FROM items AS i
JOIN desks AS d ON d.id = i.desk_id
ORDER BY i.id
LIMIT $1 OFFSET $2`

const EXPORT_DEFAULTS = Object.freeze({
  limit: 1000,
  /** The article's first setting: rows per cursor read, and the stream's buffer in rows. */
  highWaterMark: 500,
  /** Most seconds of pg_sleep a request may ask for. */
  maxSleep: 10,
  /** Rows are coalesced into chunks of about this many bytes before they are written. */
  chunkBytes: 16 * 1024
})

const FORMATS = Object.freeze(['json', 'ndjson'])
export const NDJSON_TYPE = 'application/x-ndjson'
const MAX_OFFSET = 2 ** 31 - 1

/** Check an export's query string (highWaterMark and format apply to a stream); 400 names the parameter. */
export function normalizeExportQuery (query, { maxRows }, { stream = false, accept = '' } = {}) {
  const offset = integer(query, 'offset', 0, 0, MAX_OFFSET)
  const limit = integer(query, 'limit', Math.min(EXPORT_DEFAULTS.limit, maxRows), 0, maxRows)
  const sleep = seconds(query, 'sleep', EXPORT_DEFAULTS.maxSleep)
  if (!stream) return { offset, limit, sleep, highWaterMark: null, format: 'json' }
  const highWaterMark = integer(query, 'highWaterMark', EXPORT_DEFAULTS.highWaterMark, 1, maxRows)
  let format = /\bapplication\/x-ndjson\b/i.test(accept) ? 'ndjson' : 'json'
  const asked = single(query, 'format')
  if (asked !== undefined) {
    if (!FORMATS.includes(asked)) throw badParameter('format', asked, `one of ${FORMATS.join(', ')}`)
    format = asked
  }
  return { offset, limit, sleep, highWaterMark, format }
}

function single (query, name) {
  const value = query[name]
  if (Array.isArray(value)) throw badParameter(name, value.join(','), 'a single value')
  return value === undefined || value === '' ? undefined : value
}

function integer (query, name, fallback, min, max) {
  const text = single(query, name)
  return text === undefined ? fallback : integerParam(name, text, min, max)
}

function seconds (query, name, max) {
  const text = single(query, name)
  if (text === undefined) return 0
  const allowed = `seconds from 0 to ${max}, e.g. 1 or 0.25`
  if (typeof text !== 'string' || !/^\d{1,3}(\.\d{1,3})?$/.test(text)) throw badParameter(name, text, allowed)
  const value = Number(text)
  if (value > max) throw badParameter(name, text, allowed)
  return value
}

/** Stand-in for a slow query, as the reference's `pg_sleep(1)`: paid once per request. */
export async function pause (client, sleep) {
  if (sleep > 0) await client.query('SELECT pg_sleep($1)', [sleep])
}

/** The batch: every row of the page in memory at once. */
export async function fetchBatch (client, { offset, limit }) {
  const { rows } = await client.query(EXPORT_SQL, [limit, offset])
  return rows
}

/** An object-mode stream of rows from a cursor that fetches `highWaterMark` rows when the reader asks. */
export function openRowStream (client, { offset, limit, highWaterMark }) {
  return client.query(new QueryStream(EXPORT_SQL, [limit, offset], { highWaterMark }))
}

/**
 * Rows in, JSON text out (an array with a row per line, or NDJSON), in chunks of about `chunkBytes`: a write per
 * row is the many-tiny-writes cost of experiment 4. `onChunk` is called after each chunk is pushed.
 */
export function createRowEncoder (format, { chunkBytes = EXPORT_DEFAULTS.chunkBytes, onChunk } = {}) {
  if (!FORMATS.includes(format)) throw new TypeError(`format must be one of ${FORMATS.join(', ')}, got ${format}`)
  const json = format === 'json'
  let pending = ''
  const encoder = new Transform({
    writableObjectMode: true,
    // a few rows wait here at most: the cursor's own buffer is the one sized by highWaterMark
    writableHighWaterMark: 16,
    readableHighWaterMark: chunkBytes,
    transform: function encodeRow (row, encoding, callback) {
      const text = JSON.stringify(row)
      if (json) pending += encoder.rows === 0 ? `[\n${text}` : `,\n${text}`
      else pending += `${text}\n`
      encoder.rows++
      if (pending.length >= chunkBytes) pushPending()
      callback()
    },
    flush: function closeArray (callback) {
      if (json) pending += encoder.rows === 0 ? '[]\n' : '\n]\n'
      pushPending()
      callback()
    }
  })
  function pushPending () {
    if (pending === '') return
    const chunk = Buffer.from(pending)
    pending = ''
    encoder.bytes += chunk.length
    encoder.push(chunk)
    onChunk?.(encoder)
  }
  encoder.rows = 0
  encoder.bytes = 0
  /** Characters gathered but not yet pushed (about bytes: the rows are ASCII). */
  encoder.pendingBytes = function pendingBytes () { return pending.length }
  return encoder
}
