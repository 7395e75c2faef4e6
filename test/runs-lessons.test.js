/**
 * The lessons' runs (lib/runs/lessons.js, docs/runs.md): `npm run bench -- ... --figures NAME`
 * keeps the run's record beside its figures as docs/figures/NAME.run.json, thinned to the
 * lesson's bound with its peaks kept, and every lab lists and serves it, read-only, as
 * `lesson-NAME`, which `/?run=lesson-NAME` replays and `npm run runs` compares.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { readRunRecord } from '../lib/runs/format.js'
import { LESSON_RECORD_MAX_BYTES, LESSON_RUNS_DIR, createLessonRuns, keepLessonRecord, lessonRecordText } from '../lib/runs/lessons.js'
import { labInTempDir } from './helpers.js'
import { fakeSample, makeBusyRecord, makeTestRecord } from './runs-helpers.js'

const CLI = fileURLToPath(new URL('../scripts/runs.js', import.meta.url))
const MiB = 1024 * 1024

describe('the lessons\' runs (lib/runs/lessons.js)', function () {
  let dir

  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-lessons-'))
  })

  afterEach(function () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('keeps a run\'s record beside its figures as NAME.run.json, its id lesson-NAME', async function () {
    const { record, text } = makeBusyRecord({ id: '3f2a9100-0000-4000-8000-000000000000' })
    fs.writeFileSync(path.join(dir, 'run.json'), text)
    const file = await keepLessonRecord(path.join(dir, 'run.json'), 'zip-bomb', dir)
    assert.equal(file, path.join(dir, 'zip-bomb.run.json'))
    const kept = readRunRecord(fs.readFileSync(file))
    assert.deepEqual(kept, { ...record, id: 'lesson-zip-bomb' })
    assert.deepEqual(fs.readdirSync(dir).sort(), ['run.json', 'zip-bomb.run.json'], 'no temporary file left')
  })

  it('thins a long run to the lesson\'s bound, its peaks kept and what it left out said', function () {
    const samples = []
    for (let k = 0; k < 2400; k++) samples.push(fakeSample(1_790_000_000_000 + k * 100, (80 + (k === 1234 ? 700 : k % 50)) * MiB, { requests: 8 }))
    const { record } = makeTestRecord({ samples, startedAt: 1_790_000_000_000 })
    assert.ok(JSON.stringify(record).length > LESSON_RECORD_MAX_BYTES)
    const text = lessonRecordText(record, 'long')
    assert.ok(Buffer.byteLength(text) <= LESSON_RECORD_MAX_BYTES, `${Buffer.byteLength(text)} bytes`)
    const kept = readRunRecord(text)
    assert.ok(kept.timeline.samples.some(function peak (s) { return s.rss === 780 * MiB }), 'the peak sample is kept')
    assert.deepEqual(kept.timeline.thinned.samples, { seen: 2400, kept: kept.timeline.samples.length })
    assert.throws(function badName () { lessonRecordText(record, '../x') }, /lower-case letters, digits and dashes/)
  })

  it('lists the lessons\' runs read-only as lesson-NAME, and reads one; a file that is no record is listed as such', async function () {
    fs.writeFileSync(path.join(dir, 'zip-bomb.run.json'), lessonRecordText(makeBusyRecord().record, 'zip-bomb'))
    fs.writeFileSync(path.join(dir, 'broken.run.json'), '{"format": 1}')
    fs.writeFileSync(path.join(dir, 'zip-bomb.json'), '{"command": "a figures file, not a run"}')
    const lessons = createLessonRuns({ dir })
    const listed = await lessons.list()
    assert.deepEqual(listed.map(function id (r) { return [r.id, r.lesson, r.invalid === undefined] }), [['lesson-broken', true, false], ['lesson-zip-bomb', true, true]])
    assert.equal((await lessons.read('lesson-zip-bomb')).id, 'lesson-zip-bomb')
    for (const id of ['lesson-none', 'lesson-../zip-bomb', 'zip-bomb']) {
      await assert.rejects(lessons.read(id), function notFound (err) { return err.type === 'run.not.found' }, id)
    }
    await assert.rejects(lessons.read('lesson-broken'), function invalid (err) { return err.type === 'run.invalid' && err.details.field === 'kind' })
  })

  it('holds every committed lesson run to the record\'s rules and the lesson\'s bound', function () {
    const files = fs.readdirSync(LESSON_RUNS_DIR).filter(function isRun (f) { return f.endsWith('.run.json') })
    assert.ok(files.includes('zip-bomb.run.json'), 'the zip-bomb lesson links its run')
    for (const name of files) {
      const text = fs.readFileSync(path.join(LESSON_RUNS_DIR, name))
      assert.ok(text.length <= LESSON_RECORD_MAX_BYTES, name)
      const record = readRunRecord(text, name)
      assert.equal(record.id, `lesson-${name.slice(0, -'.run.json'.length)}`)
      // the figures file beside it is of the same run
      const figures = JSON.parse(fs.readFileSync(path.join(LESSON_RUNS_DIR, name.replace(/\.run\.json$/, '.json')), 'utf8'))
      assert.equal(record.run.experiment, figures.experiment, name)
    }
  })

  describe('in a lab and in npm run runs', function () {
    const lab = labInTempDir('runs-lessons')

    it('GET /runs lists lesson-zip-bomb after the lab\'s runs, and GET /runs/lesson-zip-bomb serves it', async function () {
      const { runs } = await (await fetch(`${lab.url}/runs`)).json()
      const lesson = runs.find(function zipBomb (r) { return r.id === 'lesson-zip-bomb' })
      assert.equal(lesson.lesson, true)
      assert.equal(lesson.experiment, 'zip-bomb')
      const res = await fetch(`${lab.url}/runs/lesson-zip-bomb`)
      assert.equal(res.status, 200)
      assert.deepEqual(await res.json(), readRunRecord(fs.readFileSync(path.join(LESSON_RUNS_DIR, 'zip-bomb.run.json'))))
    })

    it('compares a lesson\'s run by its id', async function () {
      const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'compare', 'lesson-zip-bomb', 'lesson-zip-bomb'])
      assert.match(stdout, /^A: lesson-zip-bomb {2}zip-bomb \(done, engine\)/m)
      assert.match(stdout, /^\| good +\| peak above idle \|.*\| 1\.00x \|/m)
    })
  })
})
