/**
 * POST /bad within the memory budget, on a lab whose budget leaves this
 * process about 160 MiB: a dense body refused before JSON.parse runs (and
 * this process's RSS says nothing was parsed), a trailer that declares too
 * much, one that lies, inflated until what was free is passed. The
 * admission itself is test/admission.test.js's.
 */
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'
import { labWithRoom, post } from '../helpers.js'

const MiB = 1024 * 1024

/** `{"items":[[{},{},...]]}` of about `bytes`, gzipped: about 40 times its text in JSON.parse's heap. */
function denseEmptyObjects (bytes) {
  return zlib.gzipSync('{"items":[[' + Array(Math.floor(bytes / 3)).fill('{}').join(',') + ']]}')
}

/** A small valid gzip member whose trailer claims `declared` inflated bytes. */
function gzipDeclaring (declared) {
  const gz = zlib.gzipSync('{"items":[]}')
  gz.writeUInt32LE(declared, gz.length - 4)
  return gz
}

/** gzip of `bytes` spaces, made a MiB at a time (the test process must not hold them). */
async function gzipOfSpaces (bytes) {
  const mib = Buffer.alloc(MiB, 0x20)
  const out = []
  await pipeline(Readable.from((function * spaces () { for (let k = 0; k < bytes / MiB; k++) yield mib })()), zlib.createGzip({ level: 1 }), async function collect (source) {
    for await (const chunk of source) out.push(chunk)
  })
  return Buffer.concat(out)
}

describe('POST /bad within the memory budget', function () {
  const lab = labWithRoom('admission-bad', 160 * MiB)

  it('answers a body that fits', async function () {
    const res = await post(`${lab.url}/bad`, zlib.gzipSync('{"items":[{"id":1},{"id":2}]}'))
    assert.equal(res.status, 200)
    assert.equal(res.body.summary.idSum, '3')
  })

  it('refuses a dense body with 413 memory.budget.exceeded before JSON.parse runs', async function () {
    const body = denseEmptyObjects(4 * MiB)
    const before = process.memoryUsage.rss()
    const res = await post(`${lab.url}/bad`, body)
    assert.equal(res.status, 413)
    assert.equal(res.body.error.type, 'memory.budget.exceeded')
    assert.ok(res.body.error.projected > res.body.error.available)
    assert.match(res.body.error.message, /parsing this body/)
    // a parse of this body would have taken ~170 MiB; the refusal held the inflated 4 MiB and its string
    assert.ok(process.memoryUsage.rss() - before < 100 * MiB, 'nothing was parsed')
    assert.equal(lab.app.locals.admission.state().reserved, 0, 'released')
  })

  it('refuses an honest gzip whose trailer declares more than fits, before inflating a byte', async function () {
    const res = await post(`${lab.url}/bad`, gzipDeclaring(300 * MiB))
    assert.equal(res.status, 413)
    assert.equal(res.body.error.type, 'memory.budget.exceeded')
    assert.match(res.body.error.message, /inflated/)
  })

  it('refuses a body whose trailer lies (a second member) once inflating passes what was free', async function () {
    const body = Buffer.concat([await gzipOfSpaces(256 * MiB), zlib.gzipSync('{}')])
    const res = await post(`${lab.url}/bad`, body)
    assert.ok([413, 503].includes(res.status), `status ${res.status}`)
    assert.match(res.body.error.type, /^memory\./)
    assert.equal(lab.app.locals.admission.state().reserved, 0, 'released')
  })
})
