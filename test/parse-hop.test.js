/**
 * node scripts/parse-hop.js: what a hop to a parse thread costs against
 * parsing on the main thread, the figures behind HOP_WORTH in
 * lib/ingest/streamed.js (docs/limits.md quotes a run).
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const SCRIPT = fileURLToPath(new URL('../scripts/parse-hop.js', import.meta.url))
const run = promisify(execFile)

describe('node scripts/parse-hop.js', function () {
  this.timeout(60_000)

  it('prints, per document size, the time parsed here, the answer\'s time on a thread and the main thread\'s share of it', async function () {
    const { stdout } = await run(process.execPath, [SCRIPT, '--sizes', '2KB,32KB', '--count', '20', '--repeat', '1'])
    const rows = stdout.split('\n').filter(function row (line) { return /^\| \d+ B/.test(line) })
    assert.equal(rows.length, 2, stdout)
    for (const row of rows) {
      const [here, projection, answer, main] = row.split('|').slice(2, 6).map(Number)
      assert.ok(here > 0 && projection > 0 && answer > 0 && main >= 0, row)
    }
    // the larger document is the larger one, whatever the timings
    const bytes = rows.map(function size (row) { return Number(/^\| (\d+) B/.exec(row)[1]) })
    assert.ok(bytes[0] < bytes[1], stdout)
  })

  it('refuses a bad flag with its name and exit 2', async function () {
    const failed = await run(process.execPath, [SCRIPT, '--count', 'none']).then(function ran () { return null }, function threw (err) { return err })
    assert.ok(failed, 'it ran')
    assert.equal(failed.code, 2)
    assert.match(failed.stderr, /--count takes positive integers/)
  })
})
