/**
 * A lesson's answer is what the lab shows when its exercise is run as written: the answer's words
 * held to the figures file that the exercise's command, with `--figures`, wrote
 * (docs/figures/README.md). That each quoted figure equals its file is test/figures.test.js's.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ensureChunkFile } from '../experiments/chunk-size/server.js'
import { labInTempDir } from './helpers.js'
import { ROOT, readPage } from './markdown.js'

/** The text of each `<details><summary>Answer</summary>` block of a lesson, in order. */
function answersOf (lesson) {
  return [...readPage(lesson).matchAll(/<details><summary>Answer<\/summary>\n([\s\S]*?)<\/details>/g)]
    .map(function text (m) { return m[1].trim() })
}

function figures (name) {
  return JSON.parse(fs.readFileSync(path.join(ROOT, 'docs/figures', `${name}.json`), 'utf8'))
}

/** The fenced shell lines of a lesson's exercise, each the command a figures file gives less its `--figures NAME`. */
function exerciseCommands (lesson) {
  const exercise = readPage(lesson).split('\n## Exercise')[1] ?? ''
  return [...exercise.matchAll(/^npm run .+$/gm)].map(function line (m) { return m[0].trim() })
}

describe('the lessons\' answers, held to their figures files', function () {
  describe('docs/lessons/ingest.md', function () {
    const lesson = 'docs/lessons/ingest.md'

    it('its exercise runs the commands the figures files were written by, less --figures', function () {
      const written = ['ingest-50mb-json', 'ingest-50mb-ndjson'].map(function command (name) {
        return figures(name).command.replace(` --figures ${name}`, '')
      })
      assert.deepEqual(exerciseCommands(lesson), written)
    })

    it('answers "Less" for NDJSON because /bad peaked less above idle on it than on JSON', function () {
      const [ndjson, json] = ['ingest-50mb-ndjson', 'ingest-50mb-json'].map(function badPeak (name) {
        return figures(name).cells.find(function bad (c) { return c.route === 'bad' }).peakAboveIdle
      })
      assert.ok(ndjson < json, `NDJSON ${ndjson} B, JSON ${json} B`)
      const [answer] = answersOf(lesson)
      assert.match(answer, /^Less: \[/)
      for (const name of ['ingest-50mb-ndjson', 'ingest-50mb-json']) {
        assert.ok(answer.includes(`../figures/${name}.json#cells/route=bad/peakAboveIdle`), name)
      }
    })
  })
  describe('docs/lessons/tiny-writes.md', function () {
    const lesson = 'docs/lessons/tiny-writes.md'
    const cell = function only (name) { return figures(name).cells[0] }

    it('its exercises run the commands the figures files were written by, less --figures', function () {
      const written = ['tiny-writes-cork', 'tiny-writes-coalesce'].map(function command (name) {
        return figures(name).command.replace(` --figures ${name}`, '')
      })
      assert.deepEqual(exerciseCommands(lesson), written)
    })

    it('answers "about 100, not 25" write system calls for cork: IOV_MAX pieces a writev, a byte a piece', function () {
      const { syscalls, bytes } = cell('tiny-writes-cork')
      assert.ok(syscalls >= Math.ceil(bytes / 1024) && syscalls <= Math.ceil(bytes / 1024) + 10, `${syscalls} system calls`)
      assert.match(answersOf(lesson)[0], /^About 100, not 25: \[\d+\]\(\.\.\/figures\/tiny-writes-cork\.json#cells\/mode=cork\/syscalls\)/)
    })

    it('answers 2 write() calls and 2 (at times 3) system calls for coalesce', function () {
      const { writeCalls, syscalls } = cell('tiny-writes-coalesce')
      assert.equal(writeCalls, 2)
      assert.ok(syscalls === 2 || syscalls === 3, `${syscalls} system calls`)
      const answer = answersOf(lesson)[1]
      assert.match(answer, /^\[2\]\(\.\.\/figures\/tiny-writes-coalesce\.json#cells\/mode=coalesce\/writeCalls\) `write\(\)` calls/)
      assert.ok(answer.includes('(../figures/tiny-writes-coalesce.json#cells/mode=coalesce/syscalls) write system calls, at times 3'))
    })
  })
  describe('docs/lessons/upload.md', function () {
    const lesson = 'docs/lessons/upload.md'
    const name = 'upload-10x32mb'

    it('its exercise names the command the figures file was written by, less --figures', function () {
      const exercise = readPage(lesson).split('\n## Exercise')[1]
      assert.ok(exercise.includes(`\`${figures(name).command.replace(` --figures ${name}`, '')}\``))
    })

    it('answers one to two bodies an upload buffered, and the bench measured the buffered route in that span', function () {
      const data = figures(name)
      const bodies = data.cells[0].concurrency * data.bytes
      const above = function peak (route) { return data.cells.find(function of (c) { return c.route === route }).server.peakAboveIdle }
      // a margin for the lab's own growth under ten uploads: the streamed route's peak
      const buffered = above('buffer')
      assert.ok(buffered >= bodies - above('stream') && buffered <= 2 * bodies + above('stream'), `${buffered} B for ${bodies} B of bodies`)
      assert.ok(above('stream') < bodies / 4, `streamed ${above('stream')} B`)
      const [answer] = answersOf(lesson)
      assert.match(answer, /between one and two bodies at the peak: ten of 32 MB, 305 to 610 MiB/)
      for (const route of ['buffer', 'stream']) {
        assert.ok(answer.includes(`../figures/${name}.json#cells/route=${route}/server/peakAboveIdle`), route)
      }
    })
  })
  describe('docs/lessons/chunk-size.md', function () {
    const lesson = 'docs/lessons/chunk-size.md'

    // no figures file: the file is the same text on every machine, so the spec runs the command itself
    it('answers the chunks and lengths its exercise\'s command prints on the lab\'s file', async function () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lesson-chunk-size-'))
      try {
        await ensureChunkFile(path.join(dir, 'test-data'))
        const exercise = readPage(lesson).split('\n## Exercise')[1]
        const code = /```sh\nnode -e "\n([\s\S]*?)"\n```/.exec(exercise)[1]
        const printed = execFileSync(process.execPath, ['-e', code], { cwd: dir, encoding: 'utf8' })
        const runs = new Map(printed.trim().split('\n').map(function parse (line) {
          const [hwm, mode, , chunks, , length] = line.split(' ')
          return [`${hwm} ${mode}`, { chunks: Number(chunks), length: Number(length) }]
        }))
        const buffers = runs.get('4096 buffer')
        const strings = runs.get('4096 utf8')
        const n = function grouped (value) { return value.toLocaleString('en') }
        const [answer] = answersOf(lesson)
        assert.ok(answer.startsWith(`${buffers.chunks} chunks at 4 KiB, ${runs.get('1048576 buffer').chunks} chunk at 1 MiB`), answer)
        assert.ok(answer.includes(`and ${strings.chunks} again`), answer)
        assert.ok(answer.includes(`${n(buffers.length)} for Buffers, but ${n(strings.length)} for strings`), answer)
        assert.ok(answer.includes(`takes ${n(2 * strings.length)} bytes of heap`), answer)
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  })
  describe('docs/lessons/zip-bomb.md', function () {
    const lesson = 'docs/lessons/zip-bomb.md'
    const lab = labInTempDir('lesson-answers')

    it('answers exercise 2 with what both routes send for the chained bomb one gzip short, as its curl sends it', async function () {
      const exercise = readPage(lesson).split('**2. One layer short.**')[1]
      const sent = [...exercise.split('```')[1].matchAll(/-H "([^:]+): ([^"]+)"/g)]
      const headers = Object.fromEntries(sent.map(function pair (m) { return [m[1], m[2]] }))
      assert.deepEqual(headers, { 'Content-Type': 'application/gzip', 'Content-Encoding': 'gzip' })
      const bomb = Buffer.from(await (await fetch(`${lab.url}/generate?kind=bomb&variant=chained`)).arrayBuffer())
      const answer = answersOf(lesson)[1]
      for (const route of ['good', 'bad']) {
        const res = await fetch(`${lab.url}/${route}`, { method: 'POST', headers, body: bomb })
        const { error } = await res.json()
        const said = `${res.status} \`${error.type}\` at byte ${error.offset}, \``
        assert.ok(answer.startsWith(said), `/${route}: ${res.status} ${JSON.stringify(error)}`)
        assert.match(error.message, /unexpected byte 0x1f/, route)
        assert.ok(answer.includes('`unexpected byte 0x1f`, from both routes'), answer)
      }
    })
  })
  describe('docs/lessons/grade.md', function () {
    const lesson = 'docs/lessons/grade.md'
    const card = function cardOf (name) { return figures(name).card }
    const check = function named (c, name) { return c.checks.find(function is (k) { return k.name === name }) }

    it('answers which lines the starter passes and fails as its card says', function () {
      const starter = card('grade-starter')
      const passed = function allPass (area) {
        return starter.checks.filter(function of (k) { return k.area === area }).every(function ok (k) { return k.pass })
      }
      for (const area of ['correctness', 'speed', 'resilience']) assert.ok(passed(area), area)
      assert.ok(starter.checks.filter(function memory (k) { return k.area === 'memory' }).every(function fails (k) { return !k.pass }))
      for (const bomb of ['zip bomb: ratio', 'zip bomb: members']) assert.match(check(starter, bomb).figure, /^413 /, bomb)
      assert.match(check(starter, 'zip bomb: depth').figure, /^200: accepted/)
      const answer = answersOf(lesson)[0]
      assert.match(answer, /^The starter passes correctness, speed and resilience: .* Both\nmemory lines fail\./)
      assert.ok(answer.includes('../figures/grade-starter.json#card/measures/'), 'the slope quoted from the card')
      assert.match(answer, /the ratio and\nmembers bombs with a 413.* the depth bomb .* answers 200\./s)
    })

    it('answers that the solution passes every line, its bombs refused within the largest peak it quotes', function () {
      const solution = card('grade-solution')
      assert.ok(solution.checks.every(function ok (k) { return k.pass }), 'every line PASS')
      const bombs = solution.measures.filter(function bombPeak (m) { return m.area === 'safety' && m.name === 'peak' })
      const quoted = bombs.find(function members (m) { return m.check === 'zip bomb: members' })
      assert.equal(quoted.value, Math.max(...bombs.map(function value (m) { return m.value })))
      const answer = answersOf(lesson)[0]
      assert.match(answer, /The solution passes every line\./)
      assert.ok(answer.includes('(../figures/grade-solution.json#card/measures/check=zip%20bomb:%20members,name=peak/value)'))
    })
  })
})
