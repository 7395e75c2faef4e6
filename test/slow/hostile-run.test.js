/**
 * npm run bench -- hostile, a tiny run end to end (three rows, tiny sizes, a
 * lab with small limits) whose report has the shape results.json promises.
 * The options, rows and verdict are test/hostile.test.js's.
 */
import assert from 'node:assert/strict'
import { decodedHere } from '../../lib/ingest/codecs.js'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { hostileTable } from '../../scripts/hostile/verdict.js'

const run = promisify(execFile)
const CLI = fileURLToPath(new URL('../../scripts/bench.js', import.meta.url))
/**
 * Every row of results.json has these; figures the attack could not reach are null. `label`: the
 * attack's id, with the route after it when an attack on the ingest routes is replayed on another;
 * `route`: that ingest route, null for the other attacks.
 */
const ROW_FIELDS = Object.freeze([
  'id', 'label', 'route', 'group', 'title', 'target', 'judged', 'kills', 'growth', 'probe', 'inFlight', 'diskAdded', 'verdict', 'reasons'
])

describe('npm run bench -- hostile', function () {
  describe('a tiny run', function () {
    this.timeout(60000)
    let out

    before(async function () {
      out = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-hostile-test-'))
    })
    after(async function () {
      await fs.promises.rm(out, { recursive: true, force: true })
    })

    it('writes a row per attack and route, judged, with the figures the table shows', async function () {
      const { stdout } = await run(process.execPath, [
        CLI, 'hostile', '--quick', '--attacks', 'abandoned-uploads,ratio-bombs', '--routes', 'bad,streamparser-json',
        '--abandon-clients', '4', '--abandon-concurrency', '2', '--abandon-bytes', '200KB',
        '--bombs', '1', '--bomb-bytes', '20MB', '--probe-items', '10', '--settle', '1s',
        '--server-flag=--limit-inflated=10MB', '--out', out
      ], { timeout: 50000 })
      const header = hostileTable([]).split('\n')[0].split('|').map(function trim (c) { return c.trim() }).filter(Boolean)
      assert.ok(header.length >= 7, header.join(', '))
      for (const column of header) assert.ok(stdout.includes(` ${column} `), column)

      const results = JSON.parse(await fs.promises.readFile(path.join(out, 'results.json'), 'utf8'))
      assert.deepEqual(results.attacks.map(function shown (row) { return [row.label, row.route, row.judged] }), [
        ['abandoned-uploads (/streamparser-json)', 'streamparser-json', true],
        ['ratio-bombs', 'bad', false],
        ['ratio-bombs (/streamparser-json)', 'streamparser-json', true]
      ])
      for (const row of results.attacks) {
        for (const field of ROW_FIELDS) assert.ok(field in row, `${row.id} has ${field}`)
        assert.equal(row.error, undefined, row.error)
        assert.match(row.verdict, /^(held|BROKEN: .+)$/)
        assert.ok(Number.isInteger(row.kills))
        assert.ok(Number.isInteger(row.probe.status))
        assert.ok(row.growth >= 0)
        assert.ok(Number.isInteger(row.diskAdded))
        assert.ok(row.inFlight.requestsInFlight === null || Number.isInteger(row.inFlight.requestsInFlight))
      }
      // the server flag reached the labs: a 20 MB bomb passes its 10 MB inflate limit, on either route,
      // in each codec this Node decodes (one bomb each: --bombs 1)
      for (const row of results.attacks.slice(1)) {
        const statuses = row.details.answers.map(function status (a) { return a.status })
        assert.deepEqual(statuses, decodedHere().map(function refused () { return 413 }), row.label)
      }
      for (const name of ['results.md', 'report.html']) assert.ok(fs.existsSync(path.join(out, name)), name)
    })
  })
})
