/**
 * The Runs panel against the hostile records (test/runs-hostile-records.js), in Chromium against
 * a real lab (test/dashboard-session.js): with bad files in the runs folder the panel lists the
 * good runs and names each bad file; a bad file dropped on the page gets the check's words, and
 * the next good file still opens; a run whose params are named toString, constructor and
 * __proto__ lays over one without them; a results column named toString draws as its own. The
 * check, GET /runs and the CLI on the same records: test/runs-hostile.test.js.
 */
/* global window, document, DataTransfer, DragEvent -- the functions given to page.evaluate and waitForFunction run in the page */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { readRunRecord } from '../../lib/runs/format.js'
import { dashboardSession } from '../dashboard-session.js'
import { makeBusyRecord } from '../runs-helpers.js'
import { PROTOTYPE_NAMES, hostileRecords, prototypeKeyRecords } from '../runs-hostile-records.js'

/** Runs in the page: a file dropped on the page as a person drops one. */
function dropInPage ({ name, text }) {
  const transfer = new DataTransfer()
  transfer.items.add(new File([text], name, { type: 'application/json' }))
  for (const type of ['dragover', 'drop']) document.body.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }))
}

/** The words the lab's own reader has for a text, or null when it reads it. */
function refusal (text, name) {
  try {
    readRunRecord(text, name)
    return null
  } catch (err) {
    return err.message
  }
}

describe('the Runs panel and hostile records, in Chromium', function () {
  this.timeout(60_000)
  const session = dashboardSession()
  const hostile = hostileRecords()
  let page

  /** Drop a file, then wait until the panel says something new, lists another file, or replays another run. */
  async function drop (name, text) {
    const before = await page.evaluate(function mark () { return { message: window.streamlab.runs.message, files: window.streamlab.runs.files.length, run: window.streamlab.replay.run?.id ?? null } })
    await page.evaluate(dropInPage, { name, text })
    await page.waitForFunction(function changed (was) {
      const s = window.streamlab
      return s.runs.message !== was.message || s.runs.files.length !== was.files || (s.replay.run?.id ?? null) !== was.run
    }, before)
    return page.evaluate(function read () { return { runs: window.streamlab.runs, replay: window.streamlab.replay } })
  }

  before(async function withBadFiles () {
    page = session.page
    const dir = path.join(session.dataDir, 'runs')
    fs.mkdirSync(dir, { recursive: true })
    for (const [name, { text }] of Object.entries(hostile)) fs.writeFileSync(path.join(dir, `${name}.json`), text)
    fs.writeFileSync(path.join(dir, 'saved-run.json'), makeBusyRecord({ id: 'saved-run' }).text)
    await page.goto(`${session.lab.url}/?test=1`)
    await page.waitForFunction(function listed () { return window.streamlab?.state === 'live' && window.streamlab.runs.listed !== 'loading' })
  })

  it('lists the saved runs and the lessons\' with bad files in the folder, and names each bad file with its field', async function () {
    const panel = await page.evaluate(function read () { return window.streamlab.runs })
    assert.equal(panel.listed, 'listed')
    for (const id of ['saved-run', 'lesson-zip-bomb', ...Object.keys(hostile)]) assert.ok(panel.runs.includes(id), id)
    for (const [name, { field }] of Object.entries(hostile)) {
      const said = await page.textContent(`li.invalid[data-run-id="${name}"]`)
      assert.ok(said.startsWith(`${name}: ${name} is not a run record this lab reads: ${field} `), said)
    }
    await page.click('li[data-run-id="saved-run"] button.run-open')
    await page.waitForFunction(function replaying () { return window.streamlab.replay.run?.id === 'saved-run' })
  })

  it('refuses each bad file dropped on it in the check\'s words, and opens the good file dropped after it', async function () {
    const names = Object.keys(hostile).filter(function refusedByTheCheck (name) { return name !== 'renamed-run' })
    for (const [k, name] of names.entries()) {
      const { text, field } = hostile[name]
      const words = refusal(text, `${name}.json`)
      assert.ok(words.includes(`: ${field} `), words)
      const refused = await drop(`${name}.json`, text)
      assert.equal(refused.runs.kind, 'error', name)
      assert.equal(refused.runs.message, words)
      const good = makeBusyRecord({ id: `good-after-${k}` })
      const taken = await drop(`good-after-${k}.json`, good.text)
      assert.equal(taken.runs.kind, 'info', `${name}: ${taken.runs.message}`)
      assert.equal(taken.replay.mode, 'run')
      assert.equal(taken.replay.run.id, `good-after-${k}`, `the good file after ${name} opens`)
      assert.equal(taken.runs.files[0], `good-after-${k}.json`)
    }
    assert.deepEqual(session.problems, [])
  })

  it('opens a file whose id is not its name: a file from this computer has no name the lab serves it by', async function () {
    const { text } = hostile['renamed-run']
    const { replay } = await drop('renamed-run.json', text)
    assert.equal(replay.run.id, JSON.parse(text).id)
  })

  it('lays a run whose params are named toString, constructor and __proto__ over one without them', async function () {
    const { a, b } = prototypeKeyRecords()
    await drop('plain.json', a.text)
    await drop('prototype.json', b.text)
    const key = await page.evaluate(function fileKey () { return window.streamlab.runs.files.indexOf('plain.json') })
    assert.ok(key > 0)
    await page.click(`li[data-file]:nth-child(${key + 1}) button.run-overlay`)
    await page.waitForFunction(function overlaid () { return window.streamlab.replay.mode === 'overlay' })
    const { overlay } = await page.evaluate(function read () { return window.streamlab.replay })
    assert.deepEqual([overlay.a, overlay.b], ['prototype-params', 'plain-params'])
    assert.deepEqual(overlay.params, PROTOTYPE_NAMES)
    const about = await page.textContent('#replay')
    assert.ok(about.includes('params differ: toString 1 → none; constructor 2 → none; __proto__ 3 → none'), about)
    assert.deepEqual(session.problems, [])
  })

  it('draws a results column named toString from its own values, none where its rows have none', async function () {
    const { record } = makeBusyRecord({ id: 'prototype-column', routes: ['toString', 'constructor'] })
    for (const row of record.results.tables[0].rows) delete row.values.toString
    const { replay } = await drop('prototype-column.json', JSON.stringify(record))
    assert.equal(replay.run.id, 'prototype-column')
    const cells = await page.$$eval('#replay table.results td[data-route="toString"]', function texts (tds) { return tds.map(function text (td) { return td.textContent }) })
    assert.ok(cells.length > 0)
    assert.deepEqual(cells, cells.map(function none () { return '–' }))
    assert.deepEqual(session.problems, [])
  })
})
