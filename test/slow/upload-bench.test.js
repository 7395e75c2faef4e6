/**
 * npm run bench -- upload: buffering costs memory in proportion to the
 * uploads in flight while streaming does not (20 uploads of 8 MB, a fresh
 * server's peak). The routes themselves are test/upload.test.js's.
 */
import assert from 'node:assert/strict'
import * as uploadBench from '../../experiments/upload/bench.js'
import { assertCharts } from '../experiment-helpers.js'

describe('npm run bench -- upload', function () {
  it('at 20 uploads of 8 MB, buffering raises a fresh server\'s peak far more than streaming', async function () {
    this.timeout(60000)
    const opts = uploadBench.normalize({ ...defaults(uploadBench.options), concurrency: '20', bytes: '8MB', repeat: '1' })
    const result = await uploadBench.run(opts, function quiet () {})
    const [buffer, stream] = ['buffer', 'stream'].map(function cellOf (route) {
      return result.data.cells.find(function same (c) { return c.route === route && c.concurrency === 20 })
    })
    for (const cell of [buffer, stream]) {
      assert.equal(cell.ok, 20, JSON.stringify(cell.errors))
      assert.equal(cell.allBytesWritten, true)
    }
    // 20 bodies of 8 MB held at once against a few 64 KiB chunks in flight: expected ~10x, asserted 2x
    assert.ok(buffer.server.peakAboveIdle > 2 * stream.server.peakAboveIdle,
      `buffered ${buffer.server.peakAboveIdle} B above idle vs streamed ${stream.server.peakAboveIdle} B`)
    assert.ok(buffer.server.peakAboveIdle > 100 * 1024 * 1024, 'buffered holds most of 20 x 8 MB')
    assert.match(result.markdown, /\| route +\| conc/)
    assertCharts(assert, result.charts)
  })
})

/** A bench's flag defaults, as parseArgs would hand them over. */
function defaults (options) {
  const values = {}
  for (const [key, spec] of Object.entries(options)) values[key] = spec.default
  return values
}
