/**
 * The dashboard's browser specs' session: a lab on port 0 with a small
 * in-memory database, and a Chromium page (playwright-core, through
 * lib/measure/browser.js) that the specs of a describe share in order. Without
 * a Chromium-family browser the session fails with a message saying how to
 * install one, unless STREAMLAB_SKIP_BROWSER=1 (then its specs are skipped):
 * CI installs chromium, so a missing browser must not pass quietly.
 */
/* global window -- the functions given to page.evaluate run in the page */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { chromiumMissing, launchChromium } from '../lib/measure/browser.js'
import { startLab } from './helpers.js'

export const MiB = 1024 * 1024

/**
 * Register the enclosing describe's hooks: before() starts the lab and the
 * browser, afterEach() cancels a run a failed spec left, after() closes both
 * (or the lab a spec started again in its place, `session.restarted`).
 * @param {object} [labOptions] app options over the session's own (e.g. `limits`, replaced whole)
 * @returns {{ lab: object, port: number, dataDir: string, browser: object, context: object, page: object, problems: string[], restarted: object|null }}
 *   filled in by before(); `problems` are page errors and console errors (a CSP violation is one)
 */
export function dashboardSession (labOptions = {}) {
  const session = { lab: null, port: null, dataDir: null, browser: null, context: null, page: null, problems: [], restarted: null }

  before(async function startDashboardSession () {
    if (chromiumMissing() !== null) {
      if (process.env.STREAMLAB_SKIP_BROWSER === '1') this.skip()
      throw new Error(`${chromiumMissing()}; or set STREAMLAB_SKIP_BROWSER=1 to skip the browser tests`)
    }
    session.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-dashboard-'))
    session.lab = await startLab({
      dataDir: session.dataDir,
      // a small in-memory database: the page's own export times it (the lab starts it on first use)
      database: { pgliteDir: 'memory://', seed: { desks: 200, items: 3000 } },
      // a bomb is refused by both routes well before it costs the test machine much
      limits: { inflated: 64 * MiB },
      ...labOptions
    })
    session.port = Number(new URL(session.lab.url).port)
    session.browser = await launchChromium({ viewport: { width: 1280, height: 800 } })
    session.context = session.browser.context
    session.page = session.browser.page
    session.problems = session.browser.problems
  })

  afterEach(async function cancelLeftRun () {
    // a failed spec must not leave a run loading the server for the next one
    if (!session.lab || session.restarted) return
    const listing = await (await fetch(`${session.lab.url}/experiments`)).json()
    if (listing.running) await fetch(`${session.lab.url}/experiments/${listing.running}`, { method: 'DELETE' })
  })

  after(async function endDashboardSession () {
    await session.browser?.close()
    if (session.restarted) await session.restarted.close()
    else await session.lab?.close()
    if (session.dataDir) fs.rmSync(session.dataDir, { recursive: true, force: true })
  })

  return session
}

/** What the page's debug view (`window.streamlab`) says now. */
export function debugView (page) {
  return page.evaluate(function readDebugView () {
    const s = window.streamlab
    return {
      state: s.state,
      samples: s.samples,
      points: s.points,
      maxPoints: s.maxPoints,
      hardCap: s.hardCap,
      markers: s.markers,
      marks: s.marks,
      requestsSeen: s.requestsSeen,
      redraws: s.redraws
    }
  })
}

/** Fill the ingest experiment's form with `params` and press Run. */
export async function runFromForm (page, params) {
  // with more than one experiment on the server, the panel offers a choice
  if (await page.$('#experiment-name')) await page.selectOption('#experiment-name', 'ingest')
  await page.selectOption('#param-route', params.route)
  await page.fill('#param-bytes', params.bytes)
  await page.fill('#param-size', '')
  await page.fill('#param-concurrency', String(params.concurrency))
  await page.fill('#param-requests', String(params.requests))
  await page.click('#run')
}

/** Click an export button and read the file it downloads. */
export async function downloadFrom (page, selector) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(selector)])
  const file = await download.path()
  return { name: download.suggestedFilename(), bytes: fs.readFileSync(file) }
}

/**
 * Runs in the page: samples as /metrics sends them, `step` ms apart and
 * ending at the newest kept one (a saw-tooth of buffered uploads over an
 * idle floor), fed through `streamlab.inject` in place of what was kept.
 */
export function injectSyntheticSession ({ count, step }) {
  const MiB = 1024 * 1024
  const end = window.streamlab.latest
  const samples = []
  for (let i = 0; i < count; i++) {
    const wave = (i % 600) / 600
    const rss = (90 + 400 * wave) * MiB
    samples.push({
      time: end - (count - 1 - i) * step,
      interval: step,
      rss,
      heapTotal: (40 + 200 * wave) * MiB,
      heapUsed: (30 + 180 * wave) * MiB,
      external: (4 + 150 * wave) * MiB,
      arrayBuffers: (1 + 140 * wave) * MiB,
      peakRss: rss + 20 * MiB,
      peakSource: 'VmHWM',
      eventLoop: { p50: 0.1, p99: 2 + 300 * wave, max: 5 + 400 * wave, utilization: 0.1 },
      gc: { count: 0, pauseMs: 0 }
    })
  }
  return window.streamlab.inject(samples, { replace: true })
}

/** Bytes as MiB with one decimal, for a message. */
export function mib (bytes) {
  return `${(bytes / MiB).toFixed(1)} MiB`
}
