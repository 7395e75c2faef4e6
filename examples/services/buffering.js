/**
 * A gzip JSON ingest endpoint the way it is usually written, with Node's own
 * `http` module: collect the chunks, gunzip them, JSON.parse the text,
 * count the records. It answers right, and fast, and its memory is several
 * times the body, per request in flight: `npm run grade -- --url
 * http://127.0.0.1:3100/ingest --start "node examples/services/buffering.js"`
 * fails it on memory, with the figures (docs/lessons/grade.md, "Grade your
 * own service"). A body that is not gzip or not JSON gets a 400.
 *
 *   PORT=3100 node examples/services/buffering.js
 */
import http from 'node:http'
import zlib from 'node:zlib'

const port = Number(process.env.PORT ?? 3100)

const server = http.createServer(function ingest (req, res) {
  if (req.method !== 'POST' || req.url !== '/ingest') return answer(res, 404, { error: 'not found' })
  const chunks = []
  req.on('data', function keep (chunk) { chunks.push(chunk) })
  req.on('end', function parse () {
    let doc
    try {
      // the whole body, then the whole inflated body, then the whole string, then every object
      doc = JSON.parse(zlib.gunzipSync(Buffer.concat(chunks)).toString('utf8'))
    } catch (err) {
      return answer(res, 400, { error: err.message })
    }
    const items = Array.isArray(doc?.items) ? doc.items : []
    let idSum = 0n
    for (const record of items) if (Number.isSafeInteger(record?.id)) idSum += BigInt(record.id)
    answer(res, 200, { items: items.length, idSum: idSum.toString() })
  })
})

function answer (res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

server.listen(port, '127.0.0.1', function listening () {
  console.log(`buffering ingest at http://127.0.0.1:${port}/ingest (pid ${process.pid})`)
})
