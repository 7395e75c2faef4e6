/**
 * The grader probes the encodings a target takes and bombs each one
 * (grader/checks/encodings.js, the safety check "zip bomb: each encoding it
 * takes"): a service that bounds gzip with care and inflates br whole fails
 * its br bomb with the figure and passes its gzip bombs; a handler keeps the
 * lab's contract and is bombed only in what it accepts; --content-type names
 * the media type. Safety only, on settings smaller than --quick (300 MB
 * bombs), two gradings at a time.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import { cardJson, formatCard, gradeService, grade } from '../../grader/index.js'
import { validateCardJson } from '../../grader/card/card-json.js'
import { probeEncodings, encodingsLine } from '../../grader/checks/encodings.js'
import { HANDLER_CONTRACT } from '../../grader/checks/contract.js'
import { SMALL } from '../grade-settings.js'

const SERVICE = 'test/fixtures/services/bounds-gzip-inflates-br.js'
const ZSTD = typeof (await import('node:zlib')).zstdCompressSync === 'function'

function freePort () {
  return new Promise(function listen (resolve, reject) {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', function opened () {
      const { port } = server.address()
      server.close(function closed () { resolve(port) })
    })
  })
}

function check (card, name) {
  const found = card.checks.find(function named (c) { return c.name === name })
  assert.ok(found, `no check "${name}" on the card`)
  return found
}

describe('the grader and the encodings a target takes', function () {
  const cards = {}

  before(async function gradeBoth () {
    this.timeout(120_000)
    const port = await freePort()
    const [service, handler] = await Promise.all([
      gradeService({ url: `http://127.0.0.1:${port}/ingest`, command: `node ${SERVICE}`, areas: ['safety'], preset: 'quick', settings: SMALL }),
      grade('exercises/03-bomb-safe/solution.js', { areas: ['safety'], preset: 'quick', settings: SMALL, contentType: 'application/octet-stream' })
    ])
    Object.assign(cards, { service, handler })
  })

  describe('a service that bounds gzip and inflates br whole', function () {
    it('lists what it accepted and refused, in the media type it answered to', function () {
      const { encodings } = cards.service
      assert.equal(encodings.mediaType, 'application/json')
      assert.deepEqual(encodings.accepted, ['gzip', 'br'])
      assert.deepEqual(encodings.refused, ['deflate', ...(ZSTD ? ['zstd'] : []), 'identity'])
      if (!ZSTD) assert.deepEqual(encodings.untried.map(function coding (u) { return u.coding }), ['zstd'])
      assert.match(formatCard(cards.service), /^ {2}encodings: as application\/json \(found\): accepted gzip, br; refused deflate, (zstd, )?identity/m)
    })

    it('passes its gzip bombs, and fails its br bomb with the figure', function () {
      const card = cards.service
      for (const name of ['zip bomb: ratio', 'zip bomb: members', 'zip bomb: depth']) assert.equal(check(card, name).pass, true, formatCard(card))
      const each = check(card, 'zip bomb: each encoding it takes')
      assert.equal(each.pass, false, formatCard(card))
      assert.equal(each.details.codings.gzip.pass, true, formatCard(card))
      assert.equal(each.details.codings.br.pass, false, formatCard(card))
      // its growth, or its death: a figure either way
      assert.match(each.figure, /br ratio: .*(\+\d+(\.\d)? MiB|killed)/, each.figure)
      assert.match(each.figure, /^gzip: ratio 4\d\d .*, chained 4\d\d /, each.figure)
      assert.match(each.reason, /^br: /)
      assert.match(each.hint, /every coding/)
    })

    it('puts the encodings on the --json card', function () {
      const doc = cardJson(cards.service)
      assert.deepEqual(validateCardJson(doc), [])
      assert.deepEqual(doc.encodings.accepted, ['gzip', 'br'])
      assert.equal(doc.encodings.mediaType, 'application/json')
      const broken = structuredClone(doc)
      broken.encodings.accepted = 'gzip'
      assert.match(validateCardJson(broken).join('\n'), /encodings\.accepted must be an array/)
    })
  })

  describe('a handler graded by file', function () {
    it('is probed in the media type asked for, and bombed only in what it accepts', function () {
      const card = cards.handler
      assert.equal(card.encodings.mediaType, 'application/octet-stream')
      assert.deepEqual(card.encodings.accepted, ['gzip'])
      const each = check(card, 'zip bomb: each encoding it takes')
      assert.equal(each.pass, true, formatCard(card))
      assert.deepEqual(Object.keys(each.details.codings), ['gzip'])
      assert.equal(card.passed, true, formatCard(card))
      assert.match(formatCard(card), /encodings: as application\/octet-stream: accepted gzip; refused deflate, br/)
    })
  })

  describe('probeEncodings', function () {
    it('tries the next media type when the first takes nothing, and stops at an endpoint that answers nothing', async function () {
      const sent = []
      const found = await probeEncodings({
        seed: 1,
        contract: HANDLER_CONTRACT,
        post: async function fakeEndpoint (body) {
          sent.push(`${body.headers['content-type']} ${body.headers['content-encoding'] ?? 'identity'}`)
          if (body.headers['content-type'] === 'application/json') return { status: 415, json: { error: 'no' }, text: '', ms: 1 }
          return { status: 0, error: 'timeout', json: null, text: '', ms: 1000 }
        }
      })
      assert.equal(found.mediaType, 'application/json')
      assert.deepEqual(found.accepted, [])
      assert.equal(sent.filter(function octets (s) { return s.startsWith('application/octet-stream') }).length, 1, sent.join('\n'))
      assert.match(encodingsLine(found), /^as application\/json \(found\): accepted none; refused gzip, deflate, br/)
    })
  })
})
