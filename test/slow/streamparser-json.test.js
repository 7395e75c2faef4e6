/**
 * POST /streamparser-json, the slow half: four hundred mutated documents a
 * format, run through the route's handler in this process whole and a byte
 * at a time, must be accepted and refused exactly as JSON.parse does; and one
 * large body, generated as it is sent, costs far less memory than its size.
 * The rest of the route is test/streamparser-json.test.js's and
 * test/streamparser-json-refusals.test.js's.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { pipeline } from 'node:stream/promises'
import { labInTempDir } from '../helpers.js'
import { GZIP, MiB, ROUTE, asBufferedDecision, bufferedDecision, gz, ingestInReads, oneByteReads } from '../streamparser-json-helpers.js'
import { createGzipStream } from '../../lib/generate/items.js'
import { readPeakRss, resetPeakRss } from '../../lib/metrics/peak.js'
import { prng, randomRecords, serialise, mutate } from '../../lib/measure/mutate.js'

describe(`POST /${ROUTE}`, function () {
  this.timeout(60000)

  describe('chunk boundaries anywhere, in process', function () {
    for (const format of ['json', 'array']) {
      it(`accepts and refuses exactly what JSON.parse does on 400 mutated ${format} documents, whole and a byte at a time`, async function () {
        const rand = prng(format.length * 31 + 5)
        let refused = 0
        for (let k = 0; k < 400; k++) {
          const inflated = mutate(rand, serialise(rand, randomRecords(rand), format))
          const want = bufferedDecision(inflated, format)
          if (want === 'error') refused++
          const body = gz(inflated, { level: 0 })
          const where = `mutant ${k}: ${JSON.stringify(inflated.toString('latin1'))}`
          assert.deepEqual(asBufferedDecision(await ingestInReads([body], { query: { format } })), want, where)
          assert.deepEqual(asBufferedDecision(await ingestInReads(oneByteReads(body), { query: { format } })), want, `${where}, a byte at a time`)
        }
        // the mutations must make invalid documents, or agreement proves little
        assert.ok(refused > 100, `only ${refused} of 400 mutants were invalid`)
      })
    }
  })
})

describe(`POST /${ROUTE}: memory`, function () {
  this.timeout(240000)
  const lab = labInTempDir('streamparser-json-memory')

  it('reads a 100 MB document, generated as it is sent, growing the process\'s peak RSS by under 64 MiB', async function () {
    if (!resetPeakRss()) this.skip() // no way to reset the kernel's peak here: no window to measure
    const before = readPeakRss().bytes
    const { json, gzip } = createGzipStream({ bytes: 100_000_000, format: 'json', seed: 11, level: 1 })
    const res = await new Promise(function upload (resolve, reject) {
      const req = http.request(`${lab.url}/${ROUTE}`, { method: 'POST', headers: GZIP }, function answered (r) {
        let text = ''
        r.on('data', function keep (c) { text += c })
        r.on('end', function done () { resolve({ status: r.statusCode, body: JSON.parse(text) }) })
      })
      req.on('error', reject)
      pipeline(json, gzip, req).catch(reject)
    })
    const growth = readPeakRss().bytes - before
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal(res.body.summary.items, json.items)
    assert.equal(res.body.summary.inflatedBytes, json.bytes)
    assert.ok(json.bytes >= 100_000_000)
    // buffered, the body alone would be 100 MB; the route holds a chunk and a record at a time
    assert.ok(growth < 64 * MiB, `the peak grew ${(growth / MiB).toFixed(1)} MiB for a ${(json.bytes / MiB).toFixed(0)} MiB body`)
  })
})
