/**
 * The dashboard page over plain HTTP: a strict Content-Security-Policy and no
 * inline script, Chart.js from node_modules, its modules and stylesheet with
 * the same headers. The page in a browser is test/slow/dashboard.test.js's.
 */
import assert from 'node:assert/strict'
import { startLab } from './helpers.js'

describe('GET / (the dashboard page)', function () {
  let lab

  before(async function () {
    lab = await startLab()
  })

  after(async function () {
    await lab.close()
  })

  it('serves the page with a strict Content-Security-Policy and no inline script', async function () {
    const res = await fetch(`${lab.url}/`)
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type'), /^text\/html/)
    const csp = res.headers.get('content-security-policy')
    assert.match(csp, /default-src 'none'/)
    assert.match(csp, /script-src 'self'(;|$)/)
    assert.match(csp, /style-src 'self'(;|$)/)
    assert.match(csp, /connect-src 'self'(;|$)/)
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer')
    assert.equal(res.headers.get('x-frame-options'), 'DENY')
    const html = await res.text()
    // every <script> has a src, and nothing is styled inline: the policy can stay strict
    const scripts = html.match(/<script\b[^>]*>/g)
    assert.ok(scripts.length >= 2)
    for (const tag of scripts) assert.match(tag, /\ssrc="\/[^"]+"/, tag)
    assert.doesNotMatch(html, /<style|\sstyle="|\son[a-z]+="/)
    assert.doesNotMatch(html, /https?:\/\//, 'nothing is loaded from another origin')
  })

  it('serves Chart.js from node_modules at /vendor/chart.umd.js', async function () {
    const res = await fetch(`${lab.url}/vendor/chart.umd.js`)
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type'), /^text\/javascript/)
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
    assert.match(await res.text(), /Chart\.js v4\./)
  })

  it('serves its modules and stylesheet with the same headers, and leaves unknown paths to the 404', async function () {
    for (const file of ['/main.js', '/dashboard.css']) {
      const res = await fetch(`${lab.url}${file}`)
      assert.equal(res.status, 200, file)
      assert.ok(res.headers.get('content-security-policy'), file)
    }
    const missing = await fetch(`${lab.url}/no-such-file.js`)
    assert.equal(missing.status, 404)
    assert.equal((await missing.json()).error.type, 'route.not.found')
  })
})
