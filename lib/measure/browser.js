// A headless Chromium-family browser driven by playwright-core, the one the dashboard is tested and photographed
// in. Each launch gets a fresh user-data-dir (no profile, cache or localStorage leaks between runs).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { chromium } from 'playwright-core'
import { chromiumMissingMessage, findChromium } from './chromium.js'

/** A message saying where it looked for a browser (chromium.js), or null when there is one. */
export function chromiumMissing () {
  const lookup = findChromium()
  return lookup.path === null ? chromiumMissingMessage(lookup) : null
}

/** No sandbox (CI containers run as root), no GPU, nothing that phones home beside the page measured. */
const CHROMIUM_ARGS = Object.freeze([
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'
])

/**
 * Launch headless Chromium with a fresh profile and one page; `args` go after CHROMIUM_ARGS. `handleSignals: false`
 * leaves SIGINT, SIGTERM and SIGHUP to the caller, who must close the browser then (playwright's handler exits at
 * once, before the caller can stop what it started). `problems` collects the page's uncaught and console errors
 * (not "Failed to load resource": pages provoke 4xx on purpose). 'ERR_CHROMIUM_MISSING' without a browser.
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
