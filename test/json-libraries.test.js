/**
 * node scripts/json-libraries.js: the candidate streaming JSON libraries'
 * parse speed and memory on the lab's generated JSON, the figures behind the
 * textbook route's choice of @streamparser/json (docs/ingest.md quotes a
 * run). The speeds depend on the machine; what is checked is the table.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const SCRIPT = fileURLToPath(new URL('../scripts/json-libraries.js', import.meta.url))
const run = promisify(execFile)

const HEADER = ['library', 'version', 'MB/s', 'each round MB/s', 'RSS growth MiB', 'records']
const LABELS = ['@streamparser/json', 'stream-json', 'JSON.parse per record (ceiling)']

/** A Markdown table's lines as arrays of trimmed cells. */
function tableRows (stdout) {
  return stdout.split('\n')
    .filter(function tableLine (line) { return line.startsWith('| ') && !line.startsWith('| -') })
    .map(function cells (line) { return line.split('|').slice(1, -1).map(function trim (cell) { return cell.trim() }) })
}

describe('node scripts/json-libraries.js', function () {
  this.timeout(120_000)

  let stdout
  before(async function () {
    ({ stdout } = await run(process.execPath, [SCRIPT, '--bytes', '1MB', '--repeat', '2']))
  })

  it('prints one row per library: @streamparser/json, stream-json, then JSON.parse per record as the ceiling', function () {
    const [header, ...rows] = tableRows(stdout)
    assert.deepEqual(header, HEADER, stdout)
    assert.deepEqual(rows.map(function label (row) { return row[0] }), LABELS, stdout)
  })

  it('gives each library it measured a median MB/s among the rounds\' own, an RSS growth, and every generated item as a record', function () {
    const items = Number(/\((\d+) items, seed 1\)/.exec(stdout)?.[1])
    assert.ok(items > 0, stdout)
    for (const [label, version, speed, rounds, growth, records] of tableRows(stdout).slice(1)) {
      if (version === 'not installed') continue
      const each = rounds.split(', ').map(Number)
      assert.equal(each.length, 2, `${label}: ${rounds}`)
      assert.ok(each.every(function positive (s) { return s > 0 }), `${label}: ${rounds}`)
      assert.ok(Number(speed) >= Math.min(...each) && Number(speed) <= Math.max(...each), `${label}: ${speed} among ${rounds}`)
      assert.ok(Number(growth) >= 0, `${label}: ${growth}`)
      assert.equal(Number(records), items, label)
    }
  })

  it('measures the dependency and the ceiling wherever it runs, and names the Node it ran on', function () {
    const rows = tableRows(stdout)
    assert.equal(rows[1][1], '0.0.26', 'the pinned @streamparser/json')
    assert.equal(rows[3][1], process.versions.v8, 'the ceiling is V8\'s JSON.parse')
    assert.match(stdout, new RegExp(`^Node ${process.version.replaceAll('.', '\\.')}; 1\\.0 MB of generated JSON .* medians of 2 round\\(s\\)`, 'm'))
  })

  it('says how to bring stream-json in, at a pinned version and without a dependency, when it is not installed', function () {
    const streamJson = tableRows(stdout)[2]
    if (streamJson[1] === 'not installed') {
      assert.match(stdout, /`npm install --no-save stream-json@3\.8\.0`/)
    } else {
      assert.match(streamJson[1], /^\d+\.\d+\.\d+$/)
      assert.doesNotMatch(stdout, /npm install --no-save/)
    }
  })

  it('refuses a bad flag with its name and exit 2', async function () {
    const failed = await run(process.execPath, [SCRIPT, '--repeat', 'none']).then(function ran () { return null }, function threw (err) { return err })
    assert.ok(failed, 'it ran')
    assert.equal(failed.code, 2)
    assert.match(failed.stderr, /--repeat takes positive integers/)
  })
})
