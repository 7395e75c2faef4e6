/**
 * A gzip JSON ingest endpoint on Fastify, as its documentation puts it together: a `preParsing` hook hands
 * Fastify a gunzip stream, its JSON parser (`application/json` only, hence the header) reads it, and `bodyLimit`
 * caps what the parser gathers. The limit refuses a zip bomb with a 413 after holding up to it; below it the
 * parser holds the whole body: a limit is not streaming. zlib's errors are the client's (400). Grade it beside
 * express.json() (docs/lessons/grade.md):
 *
 *   npm run grade -- --url http://127.0.0.1:3103/ingest --start "node examples/services/fastify.js" \
 *     --header "Content-Type: application/json"
 */
import { pipeline } from 'node:stream'
import zlib from 'node:zlib'
import Fastify from 'fastify'

const port = Number(process.env.PORT ?? 3103)
const MiB = 1024 * 1024

const app = Fastify({ bodyLimit: 64 * MiB })

/** The route's preParsing hook: Fastify's parser reads what it returns. */
async function gunzip (request, reply, payload) {
  // pipeline() with a callback returns its last stream: a client that hangs up destroys both
  const inflated = pipeline(payload, zlib.createGunzip(), function ended () {})
  // the bytes the client sent, as the docs ask of a new payload: Fastify checks them against
  // Content-Length, and bodyLimit against both these and the inflated bytes its parser gathers
  inflated.receivedEncodedLength = 0
  payload.on('data', function counted (chunk) { inflated.receivedEncodedLength += chunk.length })
  // Fastify listens for errors once its parser reads the stream; a body it refuses unread (a 415)
  // still ends, and gunzip's error (a body cut short) must not then end the process
  inflated.on('error', function heardByFastifyWhenItReads () {})
  return inflated
}

app.setErrorHandler(function answerError (err, request, reply) {
  const status = err.code?.startsWith('Z_') ? 400 : err.statusCode ?? 500
  reply.code(status).send({ error: { status, code: err.code ?? null, message: err.message } })
})

app.post('/ingest', { preParsing: gunzip }, async function ingest (request) {
  const items = Array.isArray(request.body?.items) ? request.body.items : []
  let idSum = 0n
  for (const record of items) if (Number.isSafeInteger(record?.id)) idSum += BigInt(record.id)
  return { items: items.length, idSum: idSum.toString() }
})

app.listen({ port, host: '127.0.0.1' }).then(function listening () {
  console.log(`fastify ingest at http://127.0.0.1:${port}/ingest (pid ${process.pid})`)
})
