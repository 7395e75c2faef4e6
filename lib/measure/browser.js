/**
 * A Chromium-family browser (lib/measure/chromium.js finds it), headless, driven by playwright-core:
 * the one browser the lab's dashboard is tested and photographed in. Each
 * launch gets a fresh user-data-dir, so no profile, cache or localStorage
 * (the dashboard keeps its large-type choice there) leaks from one run into
 * the next; close() removes it.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { chromium } from 'playwright-core'
import { chromiumMissingMessage, findChromium } from './chromium.js'

/**
 * The browser to drive: CHROMIUM_PATH, else where this platform's installers
 * put Chromium, Chrome or Edge (lib/measure/chromium.js). playwright-core brings none.
 * @returns {string|null} a message saying where it looked, or null when there is one
 */
export function chromiumMissing () {
  const lookup = findChromium()
  return lookup.path === null ? chromiumMissingMessage(lookup) : null
}

/**
 * No sandbox (CI containers run as root), no GPU, and nothing that phones
 * home: a page on 127.0.0.1 must not wait for, or be measured beside, the
 * browser's own network traffic.
 */
const CHROMIUM_ARGS = Object.freeze([
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'
])

/**
 * Launch headless Chromium with a fresh profile and one page.
 * @param {{ viewport?: { width: number, height: number }, deviceScaleFactor?: number,
 *   acceptDownloads?: boolean, executablePath?: string, handleSignals?: boolean, args?: string[] }} [options]
 *   `handleSignals: false` leaves SIGINT, SIGTERM and SIGHUP to the caller: playwright's own handler
 *   closes the browser and then exits the process at once, before the caller can stop anything else
 *   it started (a lab server); a caller that says false must close the browser on those signals itself.
 *   `args` go after `CHROMIUM_ARGS` (test/slow/cross-origin.test.js points a rebinding host name at
 *   127.0.0.1 with `--host-resolver-rules`).
 * @returns {Promise<{ context: import('playwright-core').BrowserContext, page: import('playwright-core').Page,
 *   userDataDir: string, problems: string[], close: () => Promise<void> }>} `problems` collects the page's
 *   uncaught errors and console errors as they happen (not "Failed to load resource", which Chromium logs
 *   for every 4xx a page provokes on purpose); `close()` may be called more than once.
 * @throws {Error} with `code` 'ERR_CHROMIUM_MISSING' when the browser is not installed
 */
export async function launchChromium ({
  viewport = { width: 1280, height: 800 },
  deviceScaleFactor = 1,
  acceptDownloads = true,
  executablePath = undefined,
  handleSignals = true,
  args = []
} = {}) {
  if (!Array.isArray(args) || !args.every(function isText (a) { return typeof a === 'string' })) {
    throw new TypeError('option args must be an array of strings')
  }
  if (executablePath === undefined) {
    const lookup = findChromium()
    if (lookup.path === null) {
      const err = new Error(chromiumMissingMessage(lookup))
      err.code = 'ERR_CHROMIUM_MISSING'
      throw err
    }
    executablePath = lookup.path
  } else if (!fs.existsSync(executablePath)) {
    const err = new Error(`${executablePath} is missing: ${chromiumMissingMessage({ tried: [executablePath] })}`)
    err.code = 'ERR_CHROMIUM_MISSING'
    throw err
  }
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-chromium-'))
  let context
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath,
      args: [...CHROMIUM_ARGS, ...args],
      viewport,
      deviceScaleFactor,
      acceptDownloads,
      handleSIGINT: handleSignals,
      handleSIGTERM: handleSignals,
      handleSIGHUP: handleSignals
    })
  } catch (err) {
    fs.rmSync(userDataDir, { recursive: true, force: true })
    throw err
  }
  const page = context.pages()[0] ?? await context.newPage()
  const problems = []
  page.on('pageerror', function notePageError (err) { problems.push(`pageerror: ${err.message}`) })
  page.on('console', function noteConsoleError (message) {
    if (message.type() === 'error' && !/^Failed to load resource/.test(message.text())) {
      problems.push(`console: ${message.text()}`)
    }
  })

  let closing = null
  function close () {
    closing ??= (async function closeBrowser () {
      try {
        await context.close()
      } finally {
        fs.rmSync(userDataDir, { recursive: true, force: true })
      }
    })()
    return closing
  }
  return { context, page, userDataDir, problems, close }
}
