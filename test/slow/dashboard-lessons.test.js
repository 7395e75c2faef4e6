/**
 * The lesson views (`/?lesson=<name>`, dashboard/lesson-view.js) in Chromium at 1280x720, as a
 * class sees them on a projector: the Run button on the first screen, no text under 16 px, the
 * lesson's question, and after a run (the smallest each experiment accepts) its chart and its
 * results on one screen with no raw field names. One lab and one browser for every lesson; the
 * session: test/dashboard-session.js. The questions against the lesson pages:
 * test/lesson-views.test.js.
 */
/* global window, document, getComputedStyle, MutationObserver -- the functions given to page.evaluate run in the page */
import assert from 'node:assert/strict'
import { LESSONS } from '../../dashboard/lessons.js'
import { dashboardSession } from '../dashboard-session.js'

const SCREEN = Object.freeze({ width: 1280, height: 720 })
const MIN_FONT_PX = 16

/** Each lesson's run, as small as its experiment accepts: the view is under test, not the lab. */
const SMALL_RUNS = Object.freeze({
  ingest: { route: 'both', bytes: '1MB', size: '', concurrency: 1, requests: 1 },
  backpressure: { mode: 'pipeline', delayMs: 1, bytes: '1MiB', seconds: 1 },
  'zip-bomb': { variant: 'ratio', route: 'both', bytes: '10MB' },
  upload: { route: 'both', concurrency: 1, sweep: 'single', bytes: '1MB' },
  'chunk-size': { hwm: '65536', mode: 'buffer', concurrency: 1, requests: 4 },
  'tiny-writes': { mode: 'coalesce', bytes: 1000, batch: 100, sweep: 'single' },
  'db-export': { mode: 'both', rows: 100, batchSizes: '50,25', highWaterMarks: '50,10', repeat: 1 }
})

/** How long a small run may take on a busy machine before its results show. */
const RUN_MS = 240_000

/** The panels drawn by Chart.js, whose axis labels are read. */
const CHART_PANELS = Object.freeze(['memory', 'held', 'bytes', 'loop'])

/** Names of Node's own options a lesson teaches, which a form may name as they are. */
const API_NAMES = Object.freeze(['highWaterMark', 'writeFile', 'createReadStream', 'setNoDelay'])

describe('the lesson views at 1280x720', function () {
  // a run on a busy 2-core machine: the database export's four cells have taken over 90 s at load 23
  this.timeout(300_000)
  const session = dashboardSession()
  before(async function projectorScreen () {
    await session.page.setViewportSize(SCREEN)
  })

  for (const [name, lesson] of Object.entries(LESSONS)) {
    describe(`/?lesson=${name}`, function () {
      it('opens with the lesson\'s experiment chosen, its question, the Run button in view and no text under 16 px', async function () {
        const { page } = session
        await openLesson(page, session.lab.url, name)
        assert.equal(await page.inputValue('#experiment-name'), lesson.experiment)
        assert.equal(await page.evaluate(function projectorOn () { return window.streamlab.projector }), true)
        assert.match(await page.textContent('.lesson-question'), new RegExp(escaped(lesson.question)))
        assert.equal(await page.getAttribute('.lesson-full', 'href'), '/')
        const run = await page.locator('#run').boundingBox()
        assert.ok(run.y >= 0 && run.y + run.height <= SCREEN.height, `Run at y ${run.y}`)
        const smallest = await page.evaluate(smallestText)
        assert.ok(smallest.px >= MIN_FONT_PX, `${smallest.px} px: "${smallest.text}" (${smallest.tag})`)
        assert.deepEqual(await page.evaluate(rawFieldNames, API_NAMES), [])
      })

      it('names every step of the run on the screen while it runs', async function () {
        const { page } = session
        await page.evaluate(watchSteps)
        const id = await runFromLesson(page, SMALL_RUNS[name])
        await page.waitForSelector(`#results table.results[data-run-id="${id}"]`, { state: 'visible', timeout: RUN_MS })
        const steps = await page.evaluate(function seenSteps () { return window.lessonSpecSteps })
        assert.ok(steps.length >= 2, JSON.stringify(steps))
        for (const step of steps) {
          // "Run 1a2b3c4d: Warm-up · /bad. One small upload per route, ...": a step's name, never a stage's key
          assert.match(step.text, new RegExp(`^Run ${id.slice(0, 8)}: [A-Z][^.]*\\.`), JSON.stringify(step))
          assert.ok(step.top >= 0 && step.bottom <= SCREEN.height, `"${step.text}" from ${step.top} to ${step.bottom}`)
        }
        assert.match(steps.at(-1).text, /: Done\.$/)
      })

      it('shows the chart it reads and the results on one screen after a run, in words a student reads', async function () {
        const { page } = session
        // the view's panels, as the page lays them out after the run
        const boxes = await page.evaluate(shownBoxes, lesson.panels)
        const chart = boxes.find(function aChart (b) { return b.panel === lesson.panels[0] })
        for (const box of [chart, boxes.find(function results (b) { return b.panel === 'results' })]) {
          assert.ok(box, `${JSON.stringify(boxes)}`)
          assert.ok(box.top >= 0 && box.bottom <= SCREEN.height && box.height > 60, `${box.panel} from ${box.top} to ${box.bottom}`)
        }
        const fits = await page.evaluate(function unscrolled () { return document.scrollingElement.scrollHeight <= window.innerHeight })
        assert.equal(fits, true, 'the page scrolls')
        assert.deepEqual(await page.evaluate(clippedBoxes), [], 'a box cuts what it holds, or scrolls it')
        for (const selector of ['#run', '.lesson-question', '.lesson-full']) {
          const box = await page.locator(selector).boundingBox()
          assert.ok(box && box.y >= 0 && box.y + box.height <= SCREEN.height, `${selector} at ${JSON.stringify(box)}`)
        }
        const ticks = await page.evaluate(crowdedTicks)
        assert.deepEqual(ticks.crowded, [], 'axis labels repeat or run together')
        const charted = lesson.panels.some(function overTime (p) { return CHART_PANELS.includes(p) })
        if (charted) assert.ok(ticks.labels >= 2, `${ticks.labels} axis labels read`)
        const smallest = await page.evaluate(smallestText)
        assert.ok(smallest.px >= MIN_FONT_PX, `${smallest.px} px after the run: "${smallest.text}" (${smallest.tag})`)
        assert.deepEqual(await page.evaluate(rawFieldNames, API_NAMES), [])
        assert.doesNotMatch(await page.textContent('#results'), /undefined|NaN|\[object/)
        assert.deepEqual(session.problems, [])
      })
    })
  }

  it('draws an ingest run\'s measured uploads only: the warm-up is named while it runs, not drawn', async function () {
        const { page } = session
        await openLesson(page, session.lab.url, 'ingest')
        await page.evaluate(watchSteps)
        const id = await runFromLesson(page, { ...SMALL_RUNS.ingest, requests: 2 })
        await page.waitForSelector(`#results table.results[data-run-id="${id}"]`, { state: 'visible', timeout: RUN_MS })
        const steps = await page.evaluate(function seenSteps () { return window.lessonSpecSteps })
        const warmUp = /: Warm-up · \/(bad|good)\. One small upload per route, not drawn/
        assert.ok(steps.some(function named (s) { return warmUp.test(s.text) }),
          JSON.stringify(steps))
        // the page opened before the run: what it drew is the run's two uploads per route
        const seen = await page.evaluate(function seen () { return window.streamlab.requestsSeen })
        assert.deepEqual(Object.fromEntries(Object.entries(seen).filter(function drawn ([, n]) { return n > 0 })), { bad: 2, good: 2 })
        assert.match(await page.textContent('#results caption'), /concurrency 1, 2 uploads per route/)
      })

  it('opens the full page, saying so, for a lesson there is no view of', async function () {
    const { page } = session
    await page.goto(`${session.lab.url}/?lesson=no-such-lesson`)
    await page.waitForFunction(function live () { return window.streamlab?.state === 'live' })
    assert.match(await page.textContent('.lesson-unknown'),
      /There is no lesson "no-such-lesson": this is the full page\. The lessons with a view: ingest,/)
    assert.equal(await page.evaluate(function view () { return window.streamlab.lesson }), null)
    assert.equal(await page.isVisible('.side .runs'), true)
    assert.equal(await page.isVisible('#sites') || await page.isVisible('.chart-box.bytes'), true)
  })
})

describe('the database lesson\'s view when the lab cannot reach its database', function () {
  this.timeout(120_000)
  // a PostgreSQL URL on a port nothing listens on (9, discard): every connection is refused
  const session = dashboardSession({ database: { url: 'postgres://streamlab@127.0.0.1:9/streamlab' } })

  it('says which database it could not reach and what to do, above where the results go', async function () {
    const { page } = session
    await page.setViewportSize(SCREEN)
    await openLesson(page, session.lab.url, 'db-export')
    assert.equal(await page.isVisible('#lesson-database'), false, 'no note before the lab has tried the database')
    // the form's own values: the run fails at its first request to the database
    await page.click('#run')
    await page.waitForSelector('#lesson-database', { state: 'visible', timeout: 60_000 })
    const note = await page.textContent('#lesson-database')
    assert.match(note, /^The lab cannot reach its database, postgres:\/\/streamlab@127\.0\.0\.1:9\/streamlab \(connect ECONNREFUSED/)
    assert.match(note, /Start that PostgreSQL server and run again, or restart the lab without --database-url and DATABASE_URL/)
    const box = await page.locator('#lesson-database').boundingBox()
    assert.ok(box.y >= 0 && box.y + box.height <= SCREEN.height, `the note at ${JSON.stringify(box)}`)
    assert.equal(await page.getAttribute('#run-message', 'data-kind'), 'error')
    const smallest = await page.evaluate(smallestText)
    assert.ok(smallest.px >= MIN_FONT_PX, `${smallest.px} px: "${smallest.text}" (${smallest.tag})`)
  })
})

async function openLesson (page, url, name) {
  await page.goto(`${url}/?lesson=${name}`)
  await page.waitForFunction(function ready (experiment) {
    const run = document.getElementById('run')
    return window.streamlab?.state === 'live' && run !== null && !run.disabled &&
      document.getElementById('experiment-name')?.value === experiment
  }, LESSONS[name].experiment, { timeout: 30_000 })
}

/** Type a run's parameters into the view's form, press Run, and return the run's id. */
async function runFromLesson (page, params) {
  for (const [key, value] of Object.entries(params)) {
    const selector = `#param-${key}`
    const tag = await page.$eval(selector, function tagName (el) { return el.tagName })
    if (tag === 'SELECT') await page.selectOption(selector, String(value))
    else await page.fill(selector, String(value))
  }
  const before = await page.getAttribute('#experiment-form', 'data-run-id')
  await page.click('#run')
  const handle = await page.waitForFunction(function started (previous) {
    const message = document.getElementById('run-message')
    if (message?.dataset.kind === 'error') return { error: message.textContent }
    const id = document.getElementById('experiment-form').dataset.runId
    return id && id !== previous ? { id } : null
  }, before ?? '')
  const started = await handle.jsonValue()
  assert.equal(started.error, undefined)
  return started.id
}

/** Runs in the page: remember every text the run's progress line shows, and where, from now on. */
function watchSteps () {
  const line = document.getElementById('run-progress-text')
  const steps = []
  window.lessonSpecSteps = steps
  window.lessonSpecObserver?.disconnect()
  window.lessonSpecObserver = new MutationObserver(function recordStep () {
    const text = line.textContent.trim()
    if (text === '' || steps.at(-1)?.text === text) return
    const box = line.getBoundingClientRect()
    steps.push({ text, top: Math.round(box.top), bottom: Math.round(box.bottom) })
  })
  window.lessonSpecObserver.observe(line, { childList: true, subtree: true, characterData: true })
}

/**
 * Runs in the page: shown boxes that cut or scroll what they hold. A form field's help box is left
 * out: it shows the help's first lines and scrolls by design.
 */
function clippedBoxes () {
  const clipped = []
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest('.visually-hidden, .field-help, [hidden], select, svg')) continue
    const style = getComputedStyle(el)
    if (style.display === 'none' || (style.overflowX === 'visible' && style.overflowY === 'visible')) continue
    if (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1) {
      const what = `${el.tagName.toLowerCase()}#${el.id}.${el.className}`
      clipped.push(`${what}: ${el.scrollWidth}x${el.scrollHeight} in ${el.clientWidth}x${el.clientHeight}`)
    }
  }
  return clipped
}

/** Runs in the page: each shown chart's axis labels that repeat or run into the next one (Chart.js's scales), and how many it read. */
function crowdedTicks () {
  const crowded = []
  let read = 0
  for (const canvas of document.querySelectorAll('canvas')) {
    const chart = window.Chart.getChart(canvas)
    if (!chart || canvas.getBoundingClientRect().height === 0) continue
    const scale = chart.scales.x
    if (!scale?.options.ticks.display) continue
    const labels = scale.ticks.map(function labelOf (t) { return String(t.label) }).filter(Boolean)
    read += labels.length
    if (new Set(labels).size !== labels.length) crowded.push(`${canvas.id}: ${labels.join(', ')}`)
    const ctx = chart.ctx
    ctx.save()
    ctx.font = window.Chart.helpers.toFont(scale.options.ticks.font).string
    const spans = scale.ticks.map(function span (t) {
      const middle = scale.getPixelForValue(t.value)
      const half = ctx.measureText(String(t.label)).width / 2
      return { label: String(t.label), from: middle - half, to: middle + half }
    })
    ctx.restore()
    for (let i = 1; i < spans.length; i++) {
      if (spans[i].from < spans[i - 1].to) crowded.push(`${canvas.id}: "${spans[i - 1].label}" runs into "${spans[i].label}"`)
    }
  }
  return { crowded, labels: read }
}

/** Runs in the page: the smallest font-size of any text a reader sees on the screen, and whose it is. */
function smallestText () {
  let smallest = { px: Infinity, text: '', tag: '' }
  const walker = document.createTreeWalker(document.body, 4 /* NodeFilter.SHOW_TEXT */)
  for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
    const text = node.textContent.trim()
    const el = node.parentElement
    if (text === '' || el === null || el.closest('[hidden], .visually-hidden, option, script')) continue
    const style = getComputedStyle(el)
    if (style.visibility === 'hidden' || style.display === 'none') continue
    const box = el.getBoundingClientRect()
    if (box.width === 0 || box.height === 0 || box.bottom <= 0 || box.top >= window.innerHeight) continue
    const px = parseFloat(style.fontSize)
    if (px < smallest.px) smallest = { px, text: text.slice(0, 60), tag: `${el.tagName.toLowerCase()}.${el.className}` }
  }
  return smallest
}

/** Runs in the page: words of visible text that are a record's field names (camelCase), less the API names. */
function rawFieldNames (allowed) {
  const words = document.body.innerText.match(/\b[a-z]+[A-Z][A-Za-z]*\b/g) ?? []
  return [...new Set(words)].filter(function raw (word) { return !allowed.includes(word) })
}

/** Runs in the page: where each shown panel of the view, and the results, sit on the screen. */
function shownBoxes (panels) {
  const boxes = []
  for (const panel of [...panels, 'results']) {
    const el = panel === 'results' ? document.getElementById('results') : document.querySelector(`[data-panel="${panel}"]`)
    const box = el?.getBoundingClientRect()
    if (box && box.height > 0) {
      boxes.push({ panel, top: Math.round(box.top), bottom: Math.round(box.bottom), height: Math.round(box.height) })
    }
  }
  return boxes
}

function escaped (text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
