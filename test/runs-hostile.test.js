/**
 * What the check accepts, every reader shows (docs/runs.md, "Reading a record"): the check bounds
 * a record's dates, nesting, lengths and names (lib/runs/check.js); no reader spreads or recurses
 * over a record or looks its keys up on Object.prototype; a file's name is its record's id; and
 * one bad file never takes GET /runs or `npm run runs -- list` down with it. Each hostile record
 * (test/runs-hostile-records.js) goes through the check, GET /runs, GET /runs/:id and the CLI;
 * the dashboard's part is test/slow/runs-hostile.test.js's.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import {
  RECORD_MAX_DEPTH, RECORD_MAX_ITEMS, RECORD_MAX_KEY, RECORD_MAX_STRING, RECORD_MAX_TIME, checkRecordText, recordProblem
} from '../lib/runs/check.js'
import { compareRecords } from '../lib/runs/compare.js'
import { figuresOf } from '../lib/runs/figures.js'
import { createLessonRuns } from '../lib/runs/lessons.js'
import { TIMELINE_DEFAULTS } from '../lib/runs/timeline.js'
import { markdownTable } from '../lib/measure/table.js'
import { labInTempDir } from './helpers.js'
import { makeBusyRecord, makeTestRecord } from './runs-helpers.js'
import { DEEP, MANY, PROTOTYPE_NAMES, hostileRecords, nestedText, prototypeKeyRecords } from './runs-hostile-records.js'

const CLI = fileURLToPath(new URL('../scripts/runs.js', import.meta.url))
const execFileAsync = promisify(execFile)

/** Run the CLI; resolves with its exit code and output, whatever the code. */
async function runs (...args) {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [CLI, ...args], { maxBuffer: 16 * 2 ** 20 })
    return { code: 0, stdout, stderr }
  } catch (err) {
    return { code: err.code, stdout: err.stdout, stderr: err.stderr }
  }
}

/** A good record with one change, made on its parsed copy. */
function changed (change) {
  const { record } = makeBusyRecord()
  change(record)
  return record
}

describe('records a hostile tester writes', function () {
  const hostile = hostileRecords()

  describe('the check (lib/runs/check.js)', function () {
    it('refuses a time no Date holds wherever a record has one, and takes the last ones it holds', function () {
      const places = {
        'run.startedAt': function far (r) { r.run.startedAt = 1e300 },
        'run.endedAt': function far (r) { r.run.endedAt = -1e300 },
        'timeline.samples[59].time': function far (r) { r.timeline.samples.at(-1).time = RECORD_MAX_TIME + 1 },
        'timeline.spans[0].start': function far (r) { r.timeline.spans[0].start = 1e300 },
        'timeline.spans[0].end': function far (r) { r.timeline.spans[0].end = 1e300 },
        'timeline.marks[0].time': function far (r) { r.timeline.marks[0].time = -RECORD_MAX_TIME - 1 }
      }
      for (const [field, change] of Object.entries(places)) {
        assert.deepEqual(recordProblem(changed(change)), { field, problem: `is not a date (ms since 1970 within ±${RECORD_MAX_TIME})` }, field)
      }
      assert.equal(recordProblem(changed(function edges (r) { r.run.startedAt = -RECORD_MAX_TIME; r.run.endedAt = RECORD_MAX_TIME })), null)
      assert.equal(new Date(RECORD_MAX_TIME).toISOString(), '+275760-09-13T00:00:00.000Z')
      assert.deepEqual(checkRecordText(hostile['far-future'].text).problem.field, 'run.startedAt')
    })

    it(`refuses a value nested more than ${RECORD_MAX_DEPTH} deep, ${DEEP.toLocaleString('en-US')} deep included, and takes one at the bound`, function () {
      const { text } = makeTestRecord()
      const at = text.indexOf('"params":{') + '"params":{'.length
      // the record is 1 deep, its run 2, params 3: a value in params at the bound holds 29 more
      const atBound = `${text.slice(0, at)}"deep":${nestedText(RECORD_MAX_DEPTH - 3)},${text.slice(at)}`
      assert.equal(checkRecordText(atBound).problem, null)
      const past = `${text.slice(0, at)}"deep":${nestedText(RECORD_MAX_DEPTH - 2)},${text.slice(at)}`
      assert.deepEqual(checkRecordText(past).problem, { field: 'run.params.deep.a.a.a…', problem: `is nested more than ${RECORD_MAX_DEPTH} deep` })
      assert.deepEqual(checkRecordText(hostile['deep-params'].text).problem, { field: 'run.params.deep.a.a.a…', problem: `is nested more than ${RECORD_MAX_DEPTH} deep` })
      const options = changed(function deepOptions (r) { r.where.options = { list: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] } })
      assert.match(recordProblem(options).field, /^where\.options\.list\[0\]\[0\]\[0\]…$/)
    })

    it('refuses an array or object past its items, a string past its length and a name past its length; a real run stays well under each', function () {
      assert.deepEqual(checkRecordText(hostile['many-measurements'].text).problem, {
        field: 'results.cells[0].measurements',
        problem: `has ${MANY} items, over the ${RECORD_MAX_ITEMS} a record's array or object may hold`
      })
      const members = changed(function manyParams (r) { for (let k = 0; k <= RECORD_MAX_ITEMS; k++) r.run.params[`p${k}`] = k })
      assert.match(recordProblem(members).problem, /^has 10004 members, over the 10000/)
      const long = changed(function longText (r) { r.error = { type: 'x', message: 'x'.repeat(RECORD_MAX_STRING + 1) } })
      assert.deepEqual(recordProblem(long), { field: 'error.message', problem: `is ${RECORD_MAX_STRING + 1} characters, over the ${RECORD_MAX_STRING} a record's text may be` })
      const name = changed(function longName (r) { r.run.params['k'.repeat(RECORD_MAX_KEY + 1)] = 1 })
      assert.deepEqual(recordProblem(name), { field: 'run.params', problem: `has a member's name of ${RECORD_MAX_KEY + 1} characters, over the ${RECORD_MAX_KEY} a name may be` })
      for (const [bound, kept] of Object.entries(TIMELINE_DEFAULTS)) assert.ok(kept * 2 < RECORD_MAX_ITEMS, bound)
    })

    it('is quoted with its bounds in docs/runs.md', function () {
      const page = fs.readFileSync(new URL('../docs/runs.md', import.meta.url), 'utf8').replace(/\s+/g, ' ')
      const count = function count (n) { return n.toLocaleString('en-US') }
      assert.equal(RECORD_MAX_TIME, 8.64e15)
      for (const said of ['times a `Date` holds (±8.64e15 ms)', `nothing nested over ${RECORD_MAX_DEPTH} deep`, `no array or object over ${count(RECORD_MAX_ITEMS)} items`, `no string over ${count(RECORD_MAX_STRING)} characters`]) {
        assert.ok(page.includes(said), said)
      }
    })

    it('refuses a thinned note that is not what the writer leaves', function () {
      assert.deepEqual(recordProblem(changed(function odd (r) { r.timeline.thinned = { samples: 3 } })), { field: 'timeline.thinned.samples', problem: 'is not { seen, kept }' })
      assert.equal(recordProblem(changed(function usual (r) { r.timeline.thinned = { samples: { seen: 9, kept: 3 }, requestsCut: 2 } })), null)
    })
  })

  describe('the readers (lib/runs/figures.js, compare.js, lib/measure/table.js)', function () {
    it(`take ${MANY.toLocaleString('en-US')} repeats and 200,000 rows, more than a call takes as arguments, by loops`, function () {
      // unchecked on purpose: a reader must not fall over what the check would have refused
      const record = JSON.parse(hostile['many-measurements'].text)
      const figure = figuresOf(record).get('good|a')
      assert.deepEqual([figure.min, figure.max, figure.n], [1, 1, MANY])
      const table = markdownTable(['a'], Array.from({ length: 200_000 }, function row (_, k) { return [k] }))
      assert.equal(table.split('\n').length, 200_000 + 2)
    })

    it('compare says what a run\'s params named toString, constructor and __proto__ are, and that the other run has none', function () {
      const { a, b } = prototypeKeyRecords()
      const compared = compareRecords(JSON.parse(a.text), JSON.parse(b.text))
      assert.deepEqual(compared.params, PROTOTYPE_NAMES.map(function none (name, k) { return { name, a: undefined, b: k + 1 } }))
      assert.deepEqual(compareRecords(JSON.parse(b.text), JSON.parse(a.text)).params.map(function side (d) { return [d.name, d.a, d.b] }), [['toString', 1, undefined], ['constructor', 2, undefined], ['__proto__', 3, undefined]])
    })
  })

  describe('GET /runs, GET /runs/:id and npm run runs, with the hostile records in the runs folder', function () {
    const lab = labInTempDir('runs-hostile')
    let dir

    before(async function writeFiles () {
      dir = path.join(lab.dataDir, 'runs')
      const good = makeBusyRecord({ id: 'good-run' })
      await lab.app.locals.runRecorder.store.save('good-run', good.text)
      for (const [name, { text }] of Object.entries(hostile)) fs.writeFileSync(path.join(dir, `${name}.json`), text)
      const { a, b } = prototypeKeyRecords()
      for (const { id, text } of [a, b]) fs.writeFileSync(path.join(dir, `${id}.json`), text)
    })

    it('GET /runs lists every good run and the lessons\', and each bad file as invalid, naming its field', async function () {
      const res = await fetch(`${lab.url}/runs`)
      assert.equal(res.status, 200)
      const { runs: listed } = await res.json()
      const byId = new Map(listed.map(function entry (r) { return [r.id, r] }))
      for (const id of ['good-run', 'plain-params', 'prototype-params', 'lesson-zip-bomb']) assert.equal(byId.get(id)?.invalid, undefined, id)
      for (const [name, { field }] of Object.entries(hostile)) {
        assert.ok(byId.get(name).invalid.startsWith(`${name} is not a run record this lab reads: ${field} `), byId.get(name).invalid)
      }
      assert.equal(byId.get('renamed-run').invalid, 'renamed-run is not a run record this lab reads: id is "claimed-id", not "renamed-run", the name of its file')
      assert.equal(byId.has('claimed-id'), false)
    })

    it('GET /runs/:id answers 422 run.invalid naming the field for each bad file, and serves a record under its file\'s name alone', async function () {
      for (const [name, { field }] of Object.entries(hostile)) {
        const res = await fetch(`${lab.url}/runs/${name}`)
        assert.equal(res.status, 422, name)
        const { error } = await res.json()
        assert.deepEqual([error.type, error.field, error.run], ['run.invalid', field, name])
      }
      assert.equal((await fetch(`${lab.url}/runs/claimed-id`)).status, 404)
      const served = await fetch(`${lab.url}/runs/prototype-params`)
      assert.equal(served.status, 200)
      assert.deepEqual(Object.keys((await served.json()).run.params).slice(0, 3), PROTOTYPE_NAMES)
    })

    it('npm run runs -- list lists the good runs and names each bad file with its field', async function () {
      const { code, stdout, stderr } = await runs('list', '--dir', dir)
      assert.equal(code, 0, stderr)
      for (const id of ['good-run', 'plain-params', 'prototype-params']) assert.match(stdout, new RegExp(`^\\| ${id} +\\| ingest `, 'm'))
      for (const [name, { field }] of Object.entries(hostile)) {
        const line = stdout.split('\n').find(function row (l) { return l.startsWith(`| ${name} `) })
        assert.ok(line.includes('NOT A RECORD') && line.includes(`| ${field} `), line)
      }
    })

    it('npm run runs -- compare and export refuse each bad file with exit 2, naming it and its field, and crash on none', async function () {
      for (const [name, { field }] of Object.entries(hostile)) {
        for (const args of [['compare', 'good-run', name], ['export', name, '--out', path.join(os.tmpdir(), 'never.html')]]) {
          const { code, stdout, stderr } = await runs(...args, '--dir', dir)
          assert.equal(code, 2, `${args.join(' ')}: ${stdout}${stderr}`)
          assert.ok(stderr.includes(`${name}.json is not a run record this lab reads: ${field} `), stderr)
          assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace')
        }
      }
    })

    it('npm run runs -- compare lines up a run whose params are named toString, constructor and __proto__', async function () {
      const { code, stdout, stderr } = await runs('compare', 'plain-params', 'prototype-params', '--dir', dir)
      assert.equal(code, 0, stderr)
      assert.match(stdout, /^params differ: toString none → 1; constructor none → 2; __proto__ none → 3$/m)
      assert.match(stdout, /^\| bad +\| peak above idle /m)
    })
  })

  describe('the lessons\' runs', function () {
    it('refuses a lesson\'s file whose record names another lesson, and lists it as such', async function () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-lessons-hostile-'))
      try {
        fs.writeFileSync(path.join(dir, 'mine.run.json'), makeTestRecord({ id: 'lesson-theirs' }).text)
        const lessons = createLessonRuns({ dir })
        await assert.rejects(lessons.read('lesson-mine'), function invalid (err) { return err.type === 'run.invalid' && err.details.field === 'id' })
        await assert.rejects(lessons.read('lesson-theirs'), function notFound (err) { return err.type === 'run.not.found' })
        assert.deepEqual((await lessons.list()).map(function entry (r) { return [r.id, r.lesson, /id is "lesson-theirs"/.test(r.invalid)] }), [['lesson-mine', true, true]])
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  })
})
