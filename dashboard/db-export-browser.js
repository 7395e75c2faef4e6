/** Time the database export as a page sees it: fetch, parse every row, check the order (README.md). */
import { answerText } from './request-json.js'

/**
 * Export `rows` rows, `mode` 'batch' (`batch` rows per GET /db/batch) or 'stream' (`highWaterMark` rows per cursor read), with
 * `sleep` s of pg_sleep per request; `baseUrl` '' in the page; `headers` go with every request (the experiment's client sends
 * its run key, lib/limits/run-keys.js). Resolves to `timing` below; throws a TypeError for bad settings, an Error for the server's.
 */
export async function timeInBrowser ({ mode, rows, batch, highWaterMark, sleep = 0, baseUrl = '', signal, headers = {} } = {}) {
  if (mode !== 'batch' && mode !== 'stream') throw new TypeError(`mode must be batch or stream, got ${mode}`)
  checkCount('rows', rows, 0)
  if (mode === 'batch') checkCount('batch', batch, 1)
  if (mode === 'stream' && highWaterMark !== undefined) checkCount('highWaterMark', highWaterMark, 1)
  if (typeof sleep !== 'number' || !(sleep >= 0)) throw new TypeError(`sleep must be seconds >= 0, got ${sleep}`)
  const timing = {
    mode,
    rows,
    batch: mode === 'batch' ? batch : null,
    highWaterMark: mode === 'stream' ? highWaterMark ?? null : null,
    requests: 0,
    received: 0,
    inOrder: true,
    bytes: 0,
    firstByteMs: null,
    firstRowMs: null,
    totalMs: null
  }
  const started = performance.now()
  function noteRow (row) {
    // ids start at 1 and follow each other: any gap, repeat or reordering shows here
    if (row === null || typeof row !== 'object' || row.id !== timing.received + 1) timing.inOrder = false
    timing.received++
    if (timing.firstRowMs === null) timing.firstRowMs = performance.now() - started
  }
  if (mode === 'batch') {
    // one at a time, as a page that pages through a table does
    for (let offset = 0; offset < rows || (rows === 0 && timing.requests === 0); offset += batch) {
      const limit = Math.min(batch, rows - offset)
      const res = await get(`${baseUrl}/db/batch?offset=${offset}&limit=${limit}${sleepParam(sleep)}`, signal, headers)
      timing.requests++
      timing.firstByteMs ??= performance.now() - started
      const text = await res.text()
      timing.bytes += byteLength(text)
      const page = JSON.parse(text)
      if (!Array.isArray(page)) throw new Error('GET /db/batch did not answer a JSON array')
      for (const row of page) noteRow(row)
      if (page.length < limit) break
    }
  } else {
    const hwm = highWaterMark === undefined ? '' : `&highWaterMark=${highWaterMark}`
    const res = await get(`${baseUrl}/db/stream?limit=${rows}${hwm}${sleepParam(sleep)}`, signal, headers)
    timing.requests = 1
    await readLines(res, function onLine (line) {
      const text = line.endsWith(',') ? line.slice(0, -1) : line
      if (text === '[' || text === ']' || text === '[]' || text === '') return
      noteRow(JSON.parse(text))
    }, function onBytes (length) {
      timing.firstByteMs ??= performance.now() - started
      timing.bytes += length
    })
  }
  timing.totalMs = performance.now() - started
  return timing
}

function checkCount (name, value, min) {
  if (!Number.isSafeInteger(value) || value < min) throw new TypeError(`${name} must be an integer >= ${min}, got ${value}`)
}

function sleepParam (sleep) { return sleep > 0 ? `&sleep=${sleep}` : '' }

function byteLength (text) {
  // exact for the ASCII rows the lab sends; close enough for anything else
  return text.length
}

async function get (url, signal, headers) {
  const res = await fetch(url, { signal, cache: 'no-store', headers })
  if (res.status !== 200) throw new Error(`GET ${url.replace(/^https?:\/\/[^/]+/, '')}: ${await answerText(res)}`)
  return res
}

/** Feed a response body to `onLine` a line at a time, as its bytes arrive. */
async function readLines (res, onLine, onBytes) {
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  let rest = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    onBytes(value.byteLength)
    rest += decoder.decode(value, { stream: true })
    let end = rest.indexOf('\n')
    let from = 0
    while (end !== -1) {
      onLine(rest.slice(from, end))
      from = end + 1
      end = rest.indexOf('\n', from)
    }
    rest = rest.slice(from)
  }
  rest += decoder.decode()
  if (rest !== '') onLine(rest)
}
