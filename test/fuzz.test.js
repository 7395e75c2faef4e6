/**
 * A short run of the differential fuzzer (npm run fuzz): mutated gzip and
 * JSON bodies over HTTP, in random-sized writes, to both routes.
 */
import assert from 'node:assert/strict'
import { fuzz, judge } from '../scripts/fuzz.js'

describe('differential fuzzing of /bad and /good', function () {
  this.timeout(60000)

  it('finds no crash, no 5xx and no disagreement in 300 mutated bodies', async function () {
    const result = await fuzz({ iterations: 300, seed: 2026, save: false })
    assert.deepEqual(result.failures, [])
    // the inputs must exercise both sides, or agreement proves little
    assert.ok(result.accepted > 30, `only ${result.accepted} accepted`)
    assert.ok(result.rejected > 100, `only ${result.rejected} rejected`)
  })

  it('judges a disagreement, a 5xx and a dropped connection as failures', function () {
    const ok = { status: 200, json: { summary: { items: 1 } } }
    assert.equal(judge(ok, ok), null)
    assert.match(judge(ok, { status: 422, json: { error: { type: 'json.invalid' } } }), /accept\/reject differ/)
    assert.match(judge(ok, { status: 200, json: { summary: { items: 2 } } }), /summaries differ/)
    assert.match(judge({ status: 500, json: {} }, ok), /answered 500/)
    assert.match(judge(ok, { status: 0, error: 'ECONNRESET' }), /dropped/)
  })
})
