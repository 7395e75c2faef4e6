/**
 * The backpressure run's pipeline on the dashboard, in Chromium (test/dashboard-session.js): a run
 * started from the form, a slow consumer filling every buffer back to the client; the switch flipped
 * from the page (a PATCH), after which the upstream bars drain and the consumer's goes past its
 * bound; a refused change in the server's words; the run replayed from its record. The page is
 * watched on every frame and the specs wait for what it shows, never for a time. The samples
 * themselves: test/slow/backpressure.test.js.
 */
/* global window, document, getComputedStyle -- the functions given to page.evaluate and waitForFunction run in the page */
import assert from 'node:assert/strict'
import { procAvailable } from '../../lib/util/platform.js'
import { dashboardSession } from '../dashboard-session.js'

const STAGES = ['request', 'gunzip.in', 'gunzip.out', 'batcher.in', 'batcher.out', 'consumer']
/** The bar of what the server has not read yet: the kernel's receive queue, or both kernels where it cannot be read. */
const RECEIVE = procAvailable() ? 'serverReceiveQueue' : 'kernels'
const WAIT = { timeout: 60_000 }
/** Past its bound a stream holds one chunk or batch more at most (experiments/backpressure/result.js). */
const SLACK = 2 * 64 * 1024

/** The run's record once it has its result. */
async function waitForRecord (url, id) {
  for (;;) {
    const run = await (await fetch(`${url}/experiments/${id}`)).json()
    if (run.result) return run
    await new Promise(function later (resolve) { setTimeout(resolve, 100) })
  }
}

/**
 * Runs in the page, on every frame: each bar as drawn (its bytes, bound and peak as the view
 * keeps them, the fill's and the marks' heights, red or not, its text), and the most each bar
 * was seen to hold, kept in `window.pipelineSeen`.
 */
function readBars () {
  const seen = window.pipelineSeen ?? (window.pipelineSeen = {})
  const bars = {}
  for (const li of document.querySelectorAll('#pipeline .pipeline-bar')) {
    const number = function numberOf (text) { return text === '' ? null : Number(text) }
    const bar = {
      bytes: number(li.dataset.bytes),
      bound: number(li.dataset.bound),
      peak: number(li.dataset.peak),
      fill: parseFloat(li.querySelector('.pipeline-fill').style.height) || 0,
      boundShown: !li.querySelector('.pipeline-bound').hidden,
      peakAt: parseFloat(li.querySelector('.pipeline-peak').style.bottom) || 0,
      over: li.classList.contains('over'),
      colour: getComputedStyle(li.querySelector('.pipeline-fill')).backgroundColor,
      text: li.textContent
    }
    bars[li.dataset.key] = bar
    const was = seen[li.dataset.key]
    if (was === undefined || bar.bytes > was.bytes) seen[li.dataset.key] = bar
  }
  return { bars, seen, figures: document.querySelector('#pipeline .pipeline-figures')?.textContent ?? '' }
}

/** Wait, reading the bars on every frame, until `condition(arg)` holds in the page; if it never does, say what the bars showed. */
async function waitForBars (page, condition, arg) {
  try {
    await page.waitForFunction(condition, arg, { ...WAIT, polling: 'raf' })
  } catch (err) {
    const shown = await page.evaluate(function read () { return window.pipelineRead() })
    throw new Error(`${err.message}\nthe bars: ${JSON.stringify(shown)}`, { cause: err })
  }
}

describe('the backpressure pipeline, on the dashboard in Chromium', function () {
  this.timeout(120_000)
  const session = dashboardSession()
  let page
  let runId

  before(async function openThePage () {
    page = session.page
    // the reader in the page before its own scripts: the page's policy allows no eval of a string
    await page.addInitScript({ content: `window.pipelineRead = ${readBars}` })
    await page.goto(`${session.lab.url}/?test=1`)
    await page.waitForFunction(function live () { return window.streamlab?.state === 'live' })
  })

  it('draws a run started from the form left to right, the buffers filling to their bounds; the switch flipped from the page, they drain and the consumer\'s goes past its bound', async function () {
    await page.selectOption('#experiment-name', 'backpressure')
    // 20 MB at 40 ms a 64 KiB batch takes twelve seconds: every buffer fills long before the time box
    await page.fill('#param-bytes', '20MB')
    await page.fill('#param-delayMs', '40')
    await page.fill('#param-seconds', '10')
    await page.click('#run')
    await waitForBars(page, function filled ({ stages, receive, proc }) {
      const { bars } = window.pipelineRead()
      const drawn = function drawn (b) { return b !== undefined && b.bytes > 0 && b.fill > 0 }
      return stages.every(function withBound (name) { const b = bars[`stage:${name}`]; return b?.bound > 0 && b.boundShown }) &&
        stages.some(function holding (name) { return drawn(bars[`stage:${name}`]) }) &&
        drawn(bars[receive]) &&
        // the client's own buffer, or its kernel's send queue, which holds megabytes before the client waits
        (proc ? drawn(bars.client) || drawn(bars.clientSendQueue) : true)
    }, { stages: STAGES, receive: RECEIVE, proc: RECEIVE !== 'kernels' })
    const { bars } = await page.evaluate(function read () { return window.pipelineRead() })
    runId = await page.evaluate(function id () { return window.streamlab.experiment.id })
    // left to right, client to consumer
    assert.deepEqual(Object.keys(bars), ['client', ...(RECEIVE === 'kernels' ? ['kernels'] : ['clientSendQueue', 'serverReceiveQueue']), ...STAGES.map(function key (s) { return `stage:${s}` })])
    if (RECEIVE === 'kernels') assert.match(bars.kernels.text, /each kernel's queue cannot be read here/)
    assert.match(bars['stage:request'].text, /^request[\d.]+ [KM]iB of [\d.]+ [KM]iB/)
    // behind pipeline() a stream passes its bound by the chunk that filled it at most, and is red while past it
    for (const name of STAGES) {
      const b = bars[`stage:${name}`]
      assert.equal(b.over, b.bytes > b.bound, `${name}: ${b.text}`)
      assert.ok(b.bytes <= b.bound + SLACK, `${name}: ${b.text}`)
    }
    // one scale for every bar: more bytes, a taller fill, whichever bar holds them
    const byBytes = Object.values(bars).filter(function known (b) { return b.bytes !== null })
    byBytes.sort(function fewer (a, b) { return a.bytes - b.bytes })
    for (let k = 1; k < byBytes.length; k++) {
      assert.ok(byBytes[k].fill >= byBytes[k - 1].fill, `${byBytes[k].text} below ${byBytes[k - 1].text}`)
    }
    const rates = /rates \(MiB\/s\): client sent [\d.–]+ · arrived [\d.–]+ \(gzip\) · consumed [\d.–]+ \(inflated\)/
    assert.match(await page.textContent('#pipeline .pipeline-figures'), rates)

    // one spec, fill then drain: the session cancels a run a spec leaves running
    await page.fill('#pipeline-delayMs', '5000')
    await page.press('#pipeline-delayMs', 'Enter')
    await page.waitForFunction(function refused () { return document.querySelector('#pipeline .pipeline-message').dataset.kind === 'error' }, null, WAIT)
    assert.match(await page.textContent('#pipeline .pipeline-message'), /^Not changed: 400 parameter\.invalid: .*params\.delayMs/)
    const [patch] = await Promise.all([
      page.waitForRequest(function isPatch (req) { return req.method() === 'PATCH' }),
      page.selectOption('#pipeline-mode', 'ignore')
    ])
    assert.equal(new URL(patch.url()).pathname, `/experiments/${runId}`)
    assert.deepEqual(JSON.parse(patch.postData()), { params: { mode: 'ignore' } })
    // the receive side and some stream upstream of the consumer lower than the most they held; the consumer past its bound, red
    await waitForBars(page, function drained ({ receive, upstream }) {
      const { bars, seen, figures } = window.pipelineRead()
      const lower = function lower (key) { const b = bars[key]; return b !== undefined && seen[key].bytes > 0 && b.bytes < b.peak && b.fill < b.peakAt }
      return figures.includes('mode ignore') && lower(receive) &&
        upstream.some(function drainedStage (name) { return lower(`stage:${name}`) }) &&
        bars['stage:consumer'].over
    }, { receive: RECEIVE, upstream: STAGES.slice(0, -1) })
    const after = (await page.evaluate(function read () { return window.pipelineRead() })).bars
    assert.match(after['stage:consumer'].text, /past its bound/)
    // the switch shows the mode the samples show
    assert.equal(await page.inputValue('#pipeline-mode'), 'ignore')
    // vermillion (#D55E00), not the sky blue of a bar within its bound
    assert.equal(after['stage:consumer'].colour, 'rgb(213, 94, 0)')
    assert.equal(after.client.colour, 'rgb(86, 180, 233)')
    await page.waitForFunction(function ended () { return document.querySelector('#pipeline-mode').disabled }, null, WAIT)
    assert.match(await page.textContent('#pipeline .pipeline-status'), /ended: the bars hold its last sample/)
    // the last sample read no kernel queue: the row keeps its bars, and every peak is the record's
    const ended = (await page.evaluate(function read () { return window.pipelineRead() })).bars
    assert.deepEqual(Object.keys(ended), Object.keys(bars))
    const record = await waitForRecord(session.lab.url, runId)
    const peakRow = record.result.tables[0].rows.find(function peak (r) { return r.field === 'peak' })
    for (const name of STAGES) assert.equal(ended[`stage:${name}`].peak, peakRow.values[name], name)
    assert.deepEqual(session.problems, [])
  })

  it('replays the run from its record: the last sample, each bar\'s peak, a slider over the samples', async function () {
    await page.waitForFunction(function listed (id) { return window.streamlab.runs.runs.includes(id) }, runId, WAIT).catch(async function said (err) {
      err.message += `\n${runId} ${JSON.stringify(await page.evaluate(function read () { return window.streamlab.runs }))}`
      throw err
    })
    await page.click(`li[data-run-id="${runId}"] button.run-open`)
    await page.waitForFunction(function replaying () { return window.streamlab.replay.run?.pipeline !== null && window.streamlab.replay.mode === 'run' }, null, WAIT)
    const recorded = await (await fetch(`${session.lab.url}/experiments/${runId}`)).json()
    const samples = recorded.result.samples
    const shown = await page.evaluate(function read () { return window.streamlab.replay.run.pipeline })
    assert.equal(shown.samples, samples.length)
    assert.equal(shown.at, samples.length - 1)
    assert.equal(shown.settings.mode, 'ignore')
    const peakRow = recorded.result.tables[0].rows.find(function peak (r) { return r.field === 'peak' })
    for (const [k, name] of STAGES.entries()) {
      const bar = shown.bars.find(function named (b) { return b.key === `stage:${name}` })
      assert.equal(bar.bytes, samples.at(-1).stages[k].bytes, name)
      // the server's peak, looked at after every batch, as the record's table has it
      assert.equal(bar.peak, peakRow.values[name], name)
    }
    await page.fill('#replay-pipeline-at', '0')
    await page.waitForFunction(function first () { return window.streamlab.replay.run.pipeline.at === 0 })
    assert.equal((await page.evaluate(function read () { return window.streamlab.replay.run.pipeline })).ms, samples[0].ms)
    assert.deepEqual(session.problems, [])
  })
})
