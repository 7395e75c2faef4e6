/**
 * One gzip framing rule over HTTP (docs/errors.md "What ends a gzip body"):
 * each case of test/gzip-framing-cases.js gets the same answer from /bad and
 * /good, the body sent in two writes split at every byte, a few thousand
 * requests in all. The rule in process is test/gzip-framing.test.js's.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { CASES, FIRST, ONE, SECOND, bytes, splitAt } from '../gzip-framing-cases.js'
import { startLab } from '../helpers.js'

describe('one gzip framing rule', function () {
  describe('over HTTP, both routes, the body in two writes split at every byte', function () {
    this.timeout(180000)
    let lab
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 })
    before(async function start () { lab = await startLab() })
    after(async function stop () {
      agent.destroy()
      await lab?.close()
    })

    /** POST in two writes with a pause between them, so the lab usually reads them apart. */
    function postInTwo (route, parts) {
      return new Promise(function exchange (resolve, reject) {
        const length = parts.reduce(function sum (n, p) { return n + p.length }, 0)
        const req = http.request(`${lab.url}/${route}`, {
          method: 'POST',
          agent,
          headers: { host: 'localhost', 'content-type': 'application/gzip', 'content-length': length }
        }, function onResponse (res) {
          const chunks = []
          res.on('data', function keep (c) { chunks.push(c) })
          res.on('end', function done () { resolve({ status: res.statusCode, json: JSON.parse(Buffer.concat(chunks).toString()) }) })
        })
        req.on('error', reject)
        if (parts.length < 2) return req.end(parts[0])
        req.write(parts[0])
        setTimeout(function second () { req.end(parts[1]) }, 1)
      })
    }

    const summaryOfWhole = {}
    before(async function referenceSummary () {
      const res = await postInTwo('bad', [ONE])
      assert.equal(res.status, 200)
      summaryOfWhole.value = res.json.summary
    })

    it('judges the bytes after the padding before the document: the first read ends at the zero, the rest comes 200 ms later', async function () {
      // the members end in an unfinished document: a parser that answered at zlib's end would say 422 json.invalid
      const body = bytes(FIRST, [0], SECOND)
      for (const route of ['bad', 'good']) {
        const res = await new Promise(function exchange (resolve, reject) {
          const req = http.request(`${lab.url}/${route}`, {
            method: 'POST',
            agent,
            headers: { host: 'localhost', 'content-type': 'application/gzip', 'content-length': body.length }
          }, function onResponse (r) {
            const chunks = []
            r.on('data', function keep (c) { chunks.push(c) })
            r.on('end', function done () { resolve({ status: r.statusCode, json: JSON.parse(Buffer.concat(chunks).toString()) }) })
          })
          req.on('error', reject)
          req.write(body.subarray(0, FIRST.length + 1))
          setTimeout(function rest () { req.end(body.subarray(FIRST.length + 1)) }, 200)
        })
        assert.equal(res.status, 400, `${route}: ${JSON.stringify(res.json)}`)
        assert.equal(res.json.error.type, 'gzip.trailing.data', route)
      }
    })

    for (const [name, body, want] of CASES) {
      it(`${name}: ${want.text ? '200 with the whole document' : `400 ${want.type}`}`, async function () {
        for (let at = 0; at <= body.length; at++) {
          for (const route of ['bad', 'good']) {
            const res = await postInTwo(route, splitAt(body, at))
            const where = `${route}, split at ${at}`
            if (want.text) {
              assert.equal(res.status, 200, `${where}: ${JSON.stringify(res.json)}`)
              assert.deepEqual(res.json.summary, { ...summaryOfWhole.value, compressedBytes: body.length }, where)
            } else {
              assert.equal(res.status, 400, `${where}: ${JSON.stringify(res.json)}`)
              assert.equal(res.json.error.type, want.type, where)
              if (want.offset !== undefined) assert.equal(res.json.error.offset, want.offset, where)
            }
          }
        }
      })
    }
  })
})
