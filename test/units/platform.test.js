/**
 * lib/util/platform.js and lib/measure/chromium.js: the portable switch that takes the
 * Linux-only paths away, and where the lab looks for a browser on each
 * platform.
 */
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { procAvailable } from '../../lib/util/platform.js'
import { peakSourceLabel } from '../../lib/metrics/peak.js'
import { chromiumMissingMessage, findChromium } from '../../lib/measure/chromium.js'

/** A file that is there to read, standing in for /proc/self/status on any machine. */
const READABLE = fileURLToPath(import.meta.url)

describe('lib/util/platform.js', function () {
  it('turns portable mode on for STREAMLAB_PORTABLE=1 (or any word but 0 and false), off when unset', function () {
    // portable mode takes /proc away even where it is there to read
    function portable (env) { return !procAvailable({ env, platform: 'linux', probe: READABLE }) }
    assert.equal(portable({}), false)
    assert.equal(portable({ STREAMLAB_PORTABLE: '' }), false)
    assert.equal(portable({ STREAMLAB_PORTABLE: '0' }), false)
    assert.equal(portable({ STREAMLAB_PORTABLE: 'False' }), false)
    assert.equal(portable({ STREAMLAB_PORTABLE: '1' }), true)
    assert.equal(portable({ STREAMLAB_PORTABLE: 'yes' }), true)
  })

  it('reads /proc only on Linux, with /proc there, outside portable mode', function () {
    assert.equal(procAvailable({ env: { STREAMLAB_PORTABLE: '1' }, platform: 'linux' }), false)
    assert.equal(procAvailable({ env: {}, platform: 'darwin' }), false)
    assert.equal(procAvailable({ env: {}, platform: 'win32' }), false)
    assert.equal(procAvailable({ env: {}, platform: 'linux', probe: '/nonexistent/streamlab/status' }), false)
    if (process.platform === 'linux' && procAvailable({ env: process.env, platform: 'linux', probe: READABLE })) {
      assert.equal(procAvailable({ env: {}, platform: 'linux' }), true)
    }
  })

  it('names a peak by its source', function () {
    assert.equal(peakSourceLabel('VmHWM'), 'kernel peak')
    assert.equal(peakSourceLabel('sampled'), 'sampled peak')
  })
})

describe('lib/measure/chromium.js', function () {
  function only (...present) {
    return function exists (file) { return present.includes(file) }
  }

  it('takes CHROMIUM_PATH first, and only it when it is set', function () {
    const env = { CHROMIUM_PATH: '/opt/my/chrome' }
    assert.deepEqual(findChromium({ env, platform: 'linux', exists: only('/opt/my/chrome', '/usr/bin/chromium') }),
      { path: '/opt/my/chrome', from: 'CHROMIUM_PATH', tried: ['/opt/my/chrome'] })
    // a wrong CHROMIUM_PATH is an error to report, not a reason to pick another browser
    assert.deepEqual(findChromium({ env, platform: 'linux', exists: only('/usr/bin/chromium') }),
      { path: null, from: null, tried: ['/opt/my/chrome'] })
  })

  it('looks where each platform installs Chromium, Chrome or Edge', function () {
    assert.equal(findChromium({ env: {}, platform: 'linux', exists: only('/usr/bin/google-chrome') }).path,
      '/usr/bin/google-chrome')
    const mac = '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome'
    assert.equal(findChromium({ env: { HOME: '/Users/ada' }, platform: 'darwin', exists: only(mac) }).path, mac)
    assert.ok(findChromium({ env: { HOME: '/Users/ada' }, platform: 'darwin', exists: only() }).tried
      .includes('/Users/ada/Applications/Chromium.app/Contents/MacOS/Chromium'))
    const env = { PROGRAMFILES: 'C:\\Program Files', 'PROGRAMFILES(X86)': 'C:\\Program Files (x86)', LOCALAPPDATA: 'C:\\Users\\ada\\AppData\\Local' }
    const edge = 'C:\\Program Files (x86)\\Microsoft\\Edge\\Application\\msedge.exe'
    assert.equal(findChromium({ env, platform: 'win32', exists: only(edge) }).path, edge)
    assert.ok(findChromium({ env, platform: 'win32', exists: only() }).tried.includes('C:\\Users\\ada\\AppData\\Local\\Google\\Chrome\\Application\\chrome.exe'))
  })

  it('says where it looked and how to point it at a browser when there is none', function () {
    const lookup = findChromium({ env: {}, platform: 'linux', exists: only() })
    assert.equal(lookup.path, null)
    assert.ok(lookup.tried.includes('/usr/bin/chromium'))
    const message = chromiumMissingMessage(lookup, 'linux')
    assert.match(message, /\/usr\/bin\/chromium/)
    assert.match(message, /apt-get install chromium/)
    assert.match(message, /CHROMIUM_PATH/)
    assert.match(chromiumMissingMessage({ tried: [] }, 'win32'), /Chrome or Edge/)
  })
})
