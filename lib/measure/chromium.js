// Find a Chromium-family browser: CHROMIUM_PATH, then where each platform's installers put Chromium, Chrome
// or Edge. playwright-core drives any of them and brings none of its own.
import fs from 'node:fs'
import path from 'node:path'

/** The environment variable that names the browser. */
const CHROMIUM_ENV = 'CHROMIUM_PATH'

/**
 * The usual install locations, most likely first.
 * @param {string} platform process.platform
 */
function chromiumCandidates (platform, env) {
  if (platform === 'darwin') {
    const apps = ['Chromium.app/Contents/MacOS/Chromium', 'Google Chrome.app/Contents/MacOS/Google Chrome',
      'Microsoft Edge.app/Contents/MacOS/Microsoft Edge']
    const roots = ['/Applications', ...(env.HOME ? [path.posix.join(env.HOME, 'Applications')] : [])]
    return roots.flatMap(function inRoot (root) {
      return apps.map(function appPath (app) { return path.posix.join(root, app) })
    })
  }
  if (platform === 'win32') {
    const roots = [env.LOCALAPPDATA, env.PROGRAMFILES, env['PROGRAMFILES(X86)'], env.ProgramFiles, env['ProgramFiles(x86)']]
      .filter(Boolean)
    const apps = [['Chromium', 'Application', 'chrome.exe'], ['Google', 'Chrome', 'Application', 'chrome.exe'],
      ['Microsoft', 'Edge', 'Application', 'msedge.exe']]
    return [...new Set(roots.flatMap(function inRoot (root) {
      return apps.map(function appPath (parts) { return path.win32.join(root, ...parts) })
    }))]
  }
  return ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/snap/bin/chromium', '/usr/bin/google-chrome',
    '/usr/bin/google-chrome-stable', '/usr/bin/microsoft-edge', '/opt/google/chrome/chrome']
}

/**
 * @returns {{ path: string|null, from: 'CHROMIUM_PATH'|'default'|null, tried: string[] }} `path` null
 *   when none is there; `tried` lists where it looked, in order
 */
export function findChromium ({ env = process.env, platform = process.platform, exists = fs.existsSync } = {}) {
  const named = env[CHROMIUM_ENV]
  if (named) {
    // a path the user names is the one they want: no falling back behind their back
    return { path: exists(named) ? named : null, from: exists(named) ? CHROMIUM_ENV : null, tried: [named] }
  }
  const tried = chromiumCandidates(platform, env)
  const found = tried.find(function isThere (file) { return exists(file) }) ?? null
  return { path: found, from: found ? 'default' : null, tried }
}

/** What to tell a user who has no browser: where the lab looked (findChromium's `tried`), how to point it at one. */
export function chromiumMissingMessage (lookup, platform = process.platform) {
  const install = {
    linux: 'install one (Debian/Ubuntu: apt-get install chromium)',
    darwin: 'install Chrome or Chromium (brew install --cask chromium)',
    win32: 'install Chrome or Edge'
  }[platform] ?? 'install Chromium'
  return `no Chromium-family browser found (looked at ${lookup.tried.join(', ')}): ${install}, ` +
    `or set ${CHROMIUM_ENV} to the browser's executable (docs/install.md)`
}
