/**
 * The card names the graded code's own line that allocated the bytes a failed memory check
 * measured (grader/checks/memory-sites.js): handlers that buffer in four ways (chunks joined by
 * Buffer.concat, a string +=, await new Response(…).text(), JSON.parse of the whole body) each
 * get their buffering line, with its number, in the card's text, JSON and JUnit (the += line
 * before the JSON.parse that reads its string); a streaming
 * handler passes and names none; a Node service the grader starts gets its line through the
 * sampler it preloads; a Python one gets its RSS alone, and the card says so.
 *
 * Every card is graded once, up front, two at a time, in the memory area only, on the specs'
 * small settings (test/grade-settings.js).
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import { cardJson, formatCard, grade, gradeService } from '../../grader/index.js'
import { validateCardJson } from '../../grader/card/card-json.js'
import { junitXml } from '../../grader/card/junit.js'
import { smallSettings } from '../grade-settings.js'

const BUFFERING = 'test/fixtures/grade/buffering'
const SETTINGS = smallSettings({ concurrency: [1, 4] })
const HANDLERS = Object.freeze({
  concat: `${BUFFERING}/concat-chunks.js`,
  append: `${BUFFERING}/string-append.js`,
  text: `${BUFFERING}/response-text.js`,
  parse: `${BUFFERING}/parse-whole.js`,
  streaming: 'exercises/01-stream/solution-stream.js'
})

/** The line of `file` marked `// the buffering line`, counted from 1. */
function bufferingLine (file) {
  return bufferingLines(file)[0]
}

/** Every line a fixture marks as buffering: the card must name one of them. */
function bufferingLines (file) {
  const lines = []
  fs.readFileSync(file, 'utf8').split('\n').forEach(function marked (line, k) { if (line.includes('// the buffering line')) lines.push(k + 1) })
  assert.notEqual(lines.length, 0, file)
  return lines
}

function freePort () {
  return new Promise(function listen (resolve, reject) {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', function opened () {
      const { port } = server.address()
      server.close(function closed () { resolve(port) })
    })
  })
}

/** Run `work` on each of `items`, two at a time. */
async function twoAtATime (items, work) {
  const queue = [...items]
  await Promise.all([0, 1].map(async function worker () {
    while (queue.length > 0) await work(queue.shift())
  }))
}

describe('npm run grade: the card names the line that buffers', function () {
  const cards = {}

  before(async function gradeEverything () {
    this.timeout(600_000)
    const services = { nodeService: 'node examples/services/buffering.js', python: 'python3 examples/services/buffering.py' }
    await twoAtATime([...Object.keys(HANDLERS), ...Object.keys(services)], async function gradeOne (name) {
      if (HANDLERS[name] !== undefined) {
        cards[name] = await grade(HANDLERS[name], { preset: 'quick', areas: ['memory'], settings: SETTINGS })
        return
      }
      const port = await freePort()
      cards[name] = await gradeService({ url: `http://127.0.0.1:${port}/ingest`, command: services[name], areas: ['memory'], preset: 'quick', settings: SETTINGS })
    })
  })

  for (const name of ['concat', 'append', 'text', 'parse']) {
    it(`names the buffering line of ${HANDLERS[name]} in the card's text, JSON and JUnit, with its number`, function () {
      const card = cards[name]
      const file = HANDLERS[name]
      const marked = bufferingLines(file)
      const doc = cardJson(card)
      assert.deepEqual(validateCardJson(doc), [])
      assert.equal(doc.areas.memory, 'fail', formatCard(card))
      assert.equal(doc.memorySites.sampled, true, formatCard(card))
      const named = doc.memorySites.lines.find(function atLine (l) { return l.file === file && marked.includes(l.line) })
      assert.ok(named, `line ${marked.join(' or ')} not named: ${JSON.stringify(doc.memorySites)}`)
      const line = named.line
      assert.ok(named.allocatedMiB > 4 && named.share > 0, JSON.stringify(named))
      const shares = doc.memorySites.lines.reduce(function add (sum, l) { return sum + l.share }, 0)
      assert.ok(shares <= 1.02, `the lines' shares of what they allocated sum to ${shares}`)
      assert.match(named.code, /the buffering line/)
      assert.ok(doc.memorySites.lines.every(function own (l) { return l.file.startsWith(`${BUFFERING}/`) }), 'only the submission\'s files are named')
      assert.match(formatCard(card), new RegExp(`line: ${file}:${line} in \\w+: [\\d.]+ MiB allocated`))
      assert.ok(junitXml(card).includes(`line: ${file}:${line} in `), 'the JUnit failure names the line')
      const top = doc.memorySites.lines[0]
      const failed = doc.checks.find(function failedMemory (c) { return c.area === 'memory' && !c.pass })
      assert.ok(failed.hint.startsWith(`Your line ${top.file}:${top.line} (`), failed.hint)
    })
  }

  it('says what the line does in the hint: the string appended to, and the Buffer.concat', function () {
    const append = cardJson(cards.append).memorySites.lines.find(function appended (l) { return l.line === bufferingLine(HANDLERS.append) })
    assert.match(append.does, /appends each chunk to one string/)
    const concat = cardJson(cards.concat).memorySites.lines.find(function joined (l) { return l.line === bufferingLine(HANDLERS.concat) })
    assert.match(concat.does, /joins every chunk into one Buffer/)
  })

  it('puts the += line first, in the hint too, before the JSON.parse that reads the string it holds', function () {
    const doc = cardJson(cards.append)
    const [top] = doc.memorySites.lines
    assert.equal(top.line, bufferingLine(HANDLERS.append), JSON.stringify(doc.memorySites.lines))
    assert.deepEqual(top.kinds, ['string'])
    const parse = doc.memorySites.lines.find(function parses (l) { return /JSON\.parse/.test(l.code ?? '') })
    if (parse !== undefined) assert.deepEqual(parse.kinds, ['parsed'])
    const failed = doc.checks.find(function failedMemory (c) { return c.area === 'memory' && !c.pass })
    assert.match(failed.hint, /appends each chunk to one string/)
  })

  it('passes a streaming handler and names no line', function () {
    const doc = cardJson(cards.streaming)
    assert.equal(doc.areas.memory, 'pass', formatCard(cards.streaming))
    assert.equal(doc.memorySites, null)
    assert.doesNotMatch(formatCard(cards.streaming), /line: /)
  })

  it('names the line of a Node service it started, through the sampler it preloads', function () {
    const doc = cardJson(cards.nodeService)
    assert.equal(doc.areas.memory, 'fail', formatCard(cards.nodeService))
    assert.equal(doc.memorySites.sampled, true, formatCard(cards.nodeService))
    assert.ok(doc.memorySites.lines.some(function own (l) { return l.file === 'examples/services/buffering.js' }), JSON.stringify(doc.memorySites))
  })

  it('gives a service in another language its RSS alone, and says so in one line', function () {
    const doc = cardJson(cards.python)
    assert.deepEqual(validateCardJson(doc), [])
    assert.equal(doc.areas.memory, 'fail', formatCard(cards.python))
    assert.equal(doc.memorySites.sampled, false)
    assert.deepEqual(doc.memorySites.lines, [])
    assert.match(doc.memorySites.note, /^RSS alone: /)
    assert.equal(formatCard(cards.python).split('\n').filter(function said (l) { return l.includes('RSS alone') }).length, 1)
  })
})
