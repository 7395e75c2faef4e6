/**
 * server.js's flags, held to their one table (lib/config/flags.js): `--help` fits one screen and
 * gives the everyday knobs, `--help-all` gives every flag in its group, each printed default reads
 * back as its option's, and docs/api.md's flag tables list exactly the flags server.js takes, in the
 * same groups and order.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { FLAGS, FLAG_GROUPS, optionsFromFlags, usage } from '../lib/config/flags.js'
import { DEFAULTS } from '../lib/config/options.js'
import { DATABASE_DEFAULTS } from '../lib/db/options.js'
import { SERVER_DEFAULTS } from '../lib/http/server.js'
import { HUB_DEFAULTS } from '../lib/metrics/hub-options.js'
import { SUPERVISOR_DEFAULTS } from '../lib/supervisor/options.js'
import { UPLOAD_DEFAULTS } from '../experiments/upload/server.js'

const SERVER = fileURLToPath(new URL('../server.js', import.meta.url))
const API_DOC = fileURLToPath(new URL('../docs/api.md', import.meta.url))
const run = promisify(execFile)

/** A terminal's screen, the one `--help` fits in: lines, and columns. */
const SCREEN_LINES = 24
const HELP_WIDTH = 100
/** The knobs a teacher or student uses: what `--help` must give. */
const EVERYDAY = Object.freeze(['--port', '--host', '--memory-limit', '--unsafe-bad', '--limit-compressed', '--limit-inflated',
  '--parse-threads', '--allowed-hosts', '--access-token', '--database-url'])

/** The defaults tree the help texts read, put together as server.js does. */
const TREE = Object.freeze({
  ...SUPERVISOR_DEFAULTS,
  app: { ...DEFAULTS, server: SERVER_DEFAULTS, metrics: HUB_DEFAULTS, upload: UPLOAD_DEFAULTS, database: DATABASE_DEFAULTS }
})

function valueAt (tree, dotted) {
  let value = tree
  for (const key of dotted.split('.')) value = value?.[key]
  return value
}

/**
 * The default a usage text prints for a flag: what follows `default ` in the parentheses that end
 * its meaning, the meaning's wrapped lines joined; null where it prints none.
 */
function printedDefault (text, name) {
  const lines = text.split('\n')
  const at = lines.findIndex(function declares (line) { return new RegExp(`^ {2}(?:-[a-z], )?--${name}(?: |$)`).test(line) })
  let entry = lines[at]
  for (let k = at + 1; k < lines.length && /^ {3}/.test(lines[k]); k++) entry += ` ${lines[k].trim()}`
  const notes = /\(([^()]*)\)$/.exec(entry.trim())
  const said = notes === null ? null : /(?:^|, )default (.+)$/.exec(notes[1])
  return said === null ? null : said[1]
}

/** The flags a usage text gives, in order. */
function flagsIn (text) {
  return [...text.matchAll(/^ {2}(?:-[a-z], )?(--[a-z][a-z-]*)/gm)].map(function name (m) { return m[1] })
}

/**
 * docs/api.md's flag tables: under "Starting the lab", each `### group` heading and the flags its
 * table's first column names (`` `--port N` ``, `` `-h`, `--help` ``), in order.
 * @returns {Array<{ heading: string, flags: string[] }>}
 */
function apiFlagTables () {
  const text = fs.readFileSync(API_DOC, 'utf8')
  const section = text.slice(text.indexOf('## Starting the lab: flags and environment'))
  const tables = []
  for (const line of section.split('\n').slice(1)) {
    if (/^## /.test(line)) break
    const heading = /^### (.+)$/.exec(line)
    if (heading) tables.push({ heading: heading[1], flags: [] })
    const row = /^\| ([^|]*`--?[a-z][^|]*) \|/.exec(line)
    if (row && tables.length > 0) tables.at(-1).flags.push([...row[1].matchAll(/`(--[a-z][a-z-]*)/g)].at(-1)[1])
  }
  return tables
}

describe('server.js flags', function () {
  this.timeout(20000)

  describe('--help', function () {
    let text

    before(async function () {
      text = (await run(process.execPath, [SERVER, '--help'])).stdout.trimEnd()
    })

    it(`fits one screen: at most ${SCREEN_LINES} lines of at most ${HELP_WIDTH} columns`, function () {
      const lines = text.split('\n')
      assert.ok(lines.length <= SCREEN_LINES, `${lines.length} lines:\n${text}`)
      for (const line of lines) assert.ok(line.length <= HELP_WIDTH, `${line.length} columns: ${line}`)
    })

    it('gives the everyday knobs, and only those', function () {
      const given = flagsIn(text)
      for (const flag of EVERYDAY) assert.ok(given.includes(flag), `--help gives ${flag}`)
      const everyday = FLAGS.filter(function isEveryday (row) { return row.group === 'everyday' }).map(function name (row) { return `--${row.name}` })
      assert.deepEqual(given, everyday)
    })

    it('ends by pointing to --help-all and docs/api.md, and -h says the same', async function () {
      assert.match(text.split('\n').at(-1), /--help-all.*docs\/api\.md/)
      assert.equal((await run(process.execPath, [SERVER, '-h'])).stdout.trimEnd(), text)
    })
  })

  describe('--help-all', function () {
    let text

    before(async function () {
      text = (await run(process.execPath, [SERVER, '--help-all'])).stdout.trimEnd()
    })

    it('gives every flag server.js takes, once, under its group\'s heading, within the width', function () {
      assert.deepEqual([...flagsIn(text)].sort(), FLAGS.map(function name (row) { return `--${row.name}` }).sort())
      for (const group of FLAG_GROUPS) {
        const at = text.indexOf(`\n${group.name}: `)
        assert.notEqual(at, -1, `a heading for ${group.name}`)
        const next = FLAG_GROUPS.map(function headingAt (g) { return text.indexOf(`\n${g.name}: `) }).filter(function after (k) { return k > at })
        const body = text.slice(at, Math.min(text.length, ...next))
        const members = FLAGS.filter(function inGroup (row) { return row.group === group.key }).map(function name (row) { return `--${row.name}` })
        assert.deepEqual(flagsIn(body), members, group.name)
      }
      for (const line of text.split('\n')) assert.ok(line.length <= HELP_WIDTH, `${line.length} columns: ${line}`)
    })

    it('names the design comparisons as such: --share-parse, --block-size, --no-simd and --queue-timeout', function () {
      const design = FLAGS.filter(function isDesign (row) { return row.group === 'design' }).map(function name (row) { return row.name })
      assert.deepEqual(design, ['share-parse', 'block-size', 'no-simd', 'queue-timeout'])
      assert.match(text, /^Design comparisons: switches that exist to compare/m)
    })

    it('is the table printed with the code\'s defaults', function () {
      assert.equal(text, usage(TREE, { all: true }))
    })
  })

  it('takes exactly the table\'s flags: server.js builds parseArgs from it, and refuses any other (exit 2, with the usage)', async function () {
    assert.match(fs.readFileSync(SERVER, 'utf8'), /parseArgs\(\{ args: argv, options: parseArgsOptions\(\) \}\)/)
    for (const unknown of ['--max-restarts', '--no-such-flag']) {
      await assert.rejects(run(process.execPath, [SERVER, '--port', '0', unknown, '5']), function check (err) {
        assert.equal(err.code, 2, err.stderr)
        assert.match(err.stderr, new RegExp(`Unknown option '${unknown}'`))
        assert.match(err.stderr, /^Usage: node server\.js/m)
        return true
      })
    }
  })

  it('names for each flag an option the defaults have, and prints a default that reads back as it', function () {
    const text = usage(TREE, { all: true })
    for (const row of FLAGS) {
      if (row.option === null) continue
      assert.notEqual(valueAt(TREE, row.option), undefined, `--${row.name}: ${row.option} is an option with a default`)
      if (row.kind === 'switch' || row.said) continue
      const said = printedDefault(text, row.name)
      if (said === null) continue
      const read = optionsFromFlags({ [row.name]: said }, {})
      assert.deepEqual(valueAt(read, row.option), valueAt(TREE, row.option), `--${row.name} ${said}`)
    }
  })

  it('takes a flag\'s environment variable when the flag is not given, and the flag over it', function () {
    assert.equal(optionsFromFlags({}, { PORT: '4000' }).port, 4000)
    assert.equal(optionsFromFlags({ port: '5000' }, { PORT: '4000' }).port, 5000)
    assert.deepEqual(optionsFromFlags({}, { STREAMLAB_ALLOWED_HOSTS: 'a.test, .b.test,' }).app.guard.allowedHosts, ['a.test', '.b.test'])
    assert.deepEqual(optionsFromFlags({}, { DATABASE_URL: '' }).app, {}, 'an empty URL is the embedded database')
    assert.deepEqual(optionsFromFlags({ 'no-request-peak': true, 'max-connections': '100' }, {}).app, { resetPeakPerRequest: false, server: { maxConnections: 100 } })
  })

  it('docs/api.md\'s flag tables list every flag server.js takes, in the same groups and order, and no other', function () {
    const tables = apiFlagTables()
    assert.deepEqual(tables.map(function heading (t) { return t.heading }), FLAG_GROUPS.map(function name (g) { return g.name }))
    for (const [k, group] of FLAG_GROUPS.entries()) {
      const members = FLAGS.filter(function inGroup (row) { return row.group === group.key }).map(function name (row) { return `--${row.name}` })
      assert.deepEqual(tables[k].flags, members, `docs/api.md "### ${group.name}"`)
    }
  })
})
