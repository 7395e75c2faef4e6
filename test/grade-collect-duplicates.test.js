/**
 * `--collect` (grader/card/collect.js) against copied and forged figures: two students who hand
 * in the same file and the same card are both collected and each flagged in `duplicates`, naming
 * the other; a card whose site figures leave their physical range (negative MiB, a share that is
 * not what the line allocated of the growth) is refused with the field named. Nothing graded.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { cardJson } from '../grader/card/card-json.js'
import { COLUMNS } from '../grader/card/class-rows.js'
import { collectClass } from '../grader/card/collect.js'
import { gradedCard } from './card-fixtures.js'
import { parseCsv } from './csv.js'

const SEED = 3085585045
const LAB = '0.1.0+test'
const HANDLER = 'export default function handler (req, res) { res.end() }\n'
const OTHER = 'export default function handler (req, res) { req.resume(); req.on(\'end\', function done () { res.end() }) }\n'

function cardFor (handler, text, { date = '2026-11-27T10:00:00.000Z', sites = undefined } = {}) {
  const digest = createHash('sha256').update(text).digest('hex')
  const card = gradedCard({ handler, seed: SEED, labVersion: LAB, digest, failing: ['growth against body size'] })
  card.startedAt = date
  if (sites !== undefined) card.checks.find(function failed (c) { return !c.pass }).details.sites = sites
  return cardJson(card)
}

function sitesWith (line) {
  const honest = { file: 'handler.js', line: 1, functionName: 'h', kinds: ['heap'] }
  Object.assign(honest, { allocatedMiB: 150, heldMiB: 150, share: 0.5, code: null, does: null })
  return { sampled: true, growthMiB: 290, allocatedMiB: 300, note: 'sampled', lines: [{ ...honest, ...line }] }
}

describe('--collect and copied or forged cards (grader/card/collect.js)', function () {
  const dir = path.join('test-data', 'collect-duplicates')
  const cards = path.join(dir, 'cards')

  function student (name, file, text, card) {
    fs.mkdirSync(path.join(cards, name), { recursive: true })
    fs.writeFileSync(path.join(cards, name, file), text)
    fs.writeFileSync(path.join(cards, name, 'card.json'), JSON.stringify(card))
  }

  async function collect () {
    const csv = path.join(dir, 'out', 'class.csv')
    await collectClass(cards, { csv, html: path.join(dir, 'out', 'class.html'), seed: SEED, preset: 'quick', areas: null, labVersion: LAB })
    const [header, ...body] = parseCsv(fs.readFileSync(csv, 'utf8'))
    assert.deepEqual(header, COLUMNS)
    return Object.fromEntries(body.map(function asRow (cells) {
      return [cells[0], Object.fromEntries(header.map(function pair (column, k) { return [column, cells[k]] }))]
    }))
  }

  beforeEach(function emptyFolder () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  after(function removeFolder () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('flags two students with the same card and file as duplicates of each other, and no one else', async function () {
    const copied = cardFor('handler.js', HANDLER)
    student('alice', 'handler.js', HANDLER, copied)
    student('bob', 'handler.js', HANDLER, copied)
    student('carol', 'handler.js', OTHER, cardFor('handler.js', OTHER, { date: '2026-11-27T11:00:00.000Z' }))
    const rows = await collect()
    assert.deepEqual([rows.alice.verdict, rows.bob.verdict, rows.carol.verdict], ['fail', 'fail', 'fail'])
    assert.equal(rows.alice.duplicates, 'bob')
    assert.equal(rows.bob.duplicates, 'alice')
    assert.equal(rows.carol.duplicates, '')
  })

  it('flags the same file graded twice (two cards), and the same card beside a renamed file', async function () {
    student('dan', 'handler.js', HANDLER, cardFor('handler.js', HANDLER))
    student('eve', 'handler.js', HANDLER, cardFor('handler.js', HANDLER, { date: '2026-11-28T09:00:00.000Z' }))
    student('fay', 'mine.js', HANDLER, cardFor('mine.js', HANDLER))
    const rows = await collect()
    assert.equal(rows.dan.duplicates, 'eve; fay')
    assert.equal(rows.eve.duplicates, 'dan; fay')
    assert.equal(rows.fay.duplicates, 'dan; eve')
  })

  it("refuses a card whose site has negative MiB, or a share that is not its bytes over all its lines' bytes, naming the field", async function () {
    student('gil', 'handler.js', HANDLER, cardFor('handler.js', HANDLER, { sites: sitesWith({ allocatedMiB: -4768371.6, share: null }) }))
    student('hal', 'handler.js', OTHER, cardFor('handler.js', OTHER, { sites: sitesWith({ share: 12350.72 }) }))
    student('ida', 'handler.js', `${OTHER}\n`, cardFor('handler.js', `${OTHER}\n`, { sites: sitesWith({ heldMiB: -1 }) }))
    student('jo', 'handler.js', `${OTHER}\n\n`, cardFor('handler.js', `${OTHER}\n\n`, { sites: sitesWith({ share: 0.9 }) }))
    const rows = await collect()
    assert.equal(rows.gil.verdict, 'refused')
    assert.match(rows.gil.error, /memorySites\.lines\[0\]\.allocatedMiB is -4768371\.6: MiB allocated is not negative/)
    assert.equal(rows.hal.verdict, 'refused')
    assert.match(rows.hal.error, /memorySites\.lines\[0\]\.share is 12350\.72: a share of what the lines allocated is from 0 to 1/)
    assert.match(rows.ida.error, /memorySites\.lines\[0\]\.heldMiB must be MiB from 0, or null/)
    assert.match(rows.jo.error, /memorySites\.lines\[0\]\.share is 0\.9, not allocatedMiB over memorySites\.allocatedMiB \(150 \/ 300\)/)
  })
})
