/**
 * Only the person at the keyboard drives the lab: a Host allowlist against
 * DNS rebinding, no cross-site state changes, and a token for other machines
 * when the lab is open to a network. curl and scripts (no Origin, no
 * Sec-Fetch-*) keep working as before.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import zlib from 'node:zlib'
import { normalizeGuardOptions, requestGuard } from '../lib/limits/request-guard.js'
import { labInTempDir } from './helpers.js'

const GZ = zlib.gzipSync('{"items":[{"id":1}]}')
const TOKEN = 'a-token-of-at-least-16-characters'

/** One request with exactly these headers (fetch would add and forbid some), answered as JSON when it is JSON. */
function request (port, { method = 'GET', path = '/', headers = {}, body = null } = {}) {
  return new Promise(function ask (resolve, reject) {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { ...(body ? { 'content-length': body.length } : {}), ...headers }, setHost: !('host' in headers) }, function answer (res) {
      const parts = []
      res.on('data', function keep (c) { parts.push(c) })
      res.on('end', function done () {
        const text = Buffer.concat(parts).toString('utf8')
        let json = null
        try { json = JSON.parse(text) } catch { /* not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, body: json, text })
      })
    })
    req.on('error', reject)
    req.end(body ?? undefined)
  })
}

const POST_GOOD = { method: 'POST', path: '/good', body: GZ, headers: { 'content-type': 'application/gzip' } }

/**
 * What the guard's middleware does with a request of this Host, method and path from this machine,
 * without a server: the type of the error it passes on, or null when it lets the request through.
 */
function guardVerdict (guardOptions, { host = 'localhost', method = 'GET', path = '/' } = {}) {
  const req = { headers: { host }, method, path, query: {}, httpVersionMajor: 1, httpVersionMinor: 1, socket: { remoteAddress: '127.0.0.1' } }
  let verdict
  requestGuard(normalizeGuardOptions(guardOptions))(req, {}, function next (err) { verdict = err === undefined ? null : err.type })
  return verdict
}

describe('the Host allowlist', function () {
  const guard = { boundHost: 'lab.local', allowedHosts: ['classroom.test', '.school.example'] }
  /** A name as a Host header spells it: IPv6 in brackets, and a port. */
  function hostHeader (name) { return `${name.includes(':') ? `[${name}]` : name}:3000` }

  it('reads host names from Host headers, ports and IPv6 brackets included, and nothing malformed', function () {
    for (const host of ['LocalHost:3000', 'localhost.', '[::1]:3000', '127.0.0.1']) assert.equal(guardVerdict({}, { host }), null, host)
    // a malformed Host is refused even where any name is allowed: it names no host at all
    for (const bad of ['[::1', '[::1]x', 'a b', 'evil.com:port', 'host/path', '[nothost]:1']) {
      assert.equal(guardVerdict({ allowedHosts: ['all'] }, { host: bad }), 'host.not.allowed', bad)
    }
    assert.equal(guardVerdict({ allowedHosts: ['all'] }, { host: '' }), 'host.missing')
  })

  for (const name of ['localhost', 'app.localhost', '127.0.0.1', '127.5.6.7', '::1', '10.1.2.3', 'lab.local', 'classroom.test', 'school.example', 'a.b.school.example']) {
    it(`answers to ${name}`, function () { assert.equal(guardVerdict(guard, { host: hostHeader(name) }), null) })
  }
  for (const name of ['attacker.example', 'localhost.attacker.example', '127.0.0.1.nip.io', 'evil-localhost', 'notschool.example', 'classroom.test.evil']) {
    it(`refuses ${name}, as a rebinding page would name itself`, function () { assert.equal(guardVerdict(guard, { host: hostHeader(name) }), 'host.not.allowed') })
  }

  it('answers to any host with --allowed-hosts all', function () {
    assert.equal(guardVerdict({ allowedHosts: ['all'] }, { host: 'attacker.example' }), null)
  })

  it('refuses bad options with a TypeError', function () {
    assert.throws(function notArray () { normalizeGuardOptions({ allowedHosts: 'x' }) }, TypeError)
    assert.throws(function shortToken () { normalizeGuardOptions({ accessToken: 'short' }) }, TypeError)
  })
})

describe('requests the guard sees', function () {
  const lab = labInTempDir('guard')

  it('answers 403 host.not.allowed as JSON, naming the flag, to a rebinding host name', async function () {
    for (const path of ['/experiments', '/db/status', '/metrics', '/']) {
      const res = await request(lab.port, { path, headers: { host: `attacker.example:${lab.port}` } })
      assert.equal(res.status, 403, path)
      assert.equal(res.body.error.type, 'host.not.allowed')
      assert.match(res.body.error.message, /--allowed-hosts/)
    }
  })

  it('serves localhost, *.localhost, 127.0.0.1 and [::1] by name', async function () {
    for (const host of [`localhost:${lab.port}`, `lab.localhost:${lab.port}`, `127.0.0.1:${lab.port}`, `[::1]:${lab.port}`]) {
      assert.equal((await request(lab.port, { path: '/experiments', headers: { host } })).status, 200, host)
    }
  })

  it('lets curl and scripts (no Origin, no Sec-Fetch-*) write as before', async function () {
    assert.equal((await request(lab.port, POST_GOOD)).status, 200)
  })

  for (const site of ['cross-site', 'same-site']) {
    it(`answers 403 request.cross.site to a write marked Sec-Fetch-Site: ${site}`, async function () {
      const res = await request(lab.port, { ...POST_GOOD, headers: { ...POST_GOOD.headers, 'sec-fetch-site': site, 'sec-fetch-mode': 'no-cors' } })
      assert.equal(res.status, 403)
      assert.equal(res.body.error.type, 'request.cross.site')
      assert.equal(res.body.error.secFetchSite, site)
    })
  }

  it('refuses a cross-site image that would save a file, and one that would reset the peak', async function () {
    const save = await request(lab.port, { path: '/generate?save=1&size=10', headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' } })
    assert.equal(save.status, 403)
    const reset = await request(lab.port, { method: 'POST', path: '/metrics/peak/reset', body: Buffer.from('x'), headers: { 'content-type': 'text/plain', 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'no-cors' } })
    assert.equal(reset.status, 403)
  })

  it('refuses cross-site reads too, but lets a link from elsewhere open the dashboard', async function () {
    const read = await request(lab.port, { path: '/experiments', headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' } })
    assert.equal(read.status, 403)
    const page = await request(lab.port, { path: '/', headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' } })
    assert.equal(page.status, 200)
    const saveByLink = await request(lab.port, { path: '/generate?save=1&size=10', headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } })
    assert.equal(saveByLink.status, 403, 'a navigation that would write is still refused')
  })

  it('lets the lab\'s own page write (same-origin), and a URL typed by hand (none)', async function () {
    for (const site of ['same-origin', 'none']) {
      const res = await request(lab.port, { ...POST_GOOD, headers: { ...POST_GOOD.headers, 'sec-fetch-site': site, origin: `http://127.0.0.1:${lab.port}` } })
      assert.equal(res.status, 200, site)
    }
  })

  it('falls back to Origin where a browser sends no fetch metadata: a foreign or null Origin may not write', async function () {
    for (const origin of [`http://localhost:${lab.port + 1}`, 'http://attacker.example', 'null']) {
      const res = await request(lab.port, { ...POST_GOOD, headers: { ...POST_GOOD.headers, origin } })
      assert.equal(res.status, 403, origin)
      assert.equal(res.body.error.origin, origin)
    }
    const read = await request(lab.port, { path: '/experiments', headers: { origin: 'http://attacker.example' } })
    assert.equal(read.status, 200, 'a read is blocked by the browser itself (no CORS headers), not refused')
  })

  it('counts every method but GET, HEAD and OPTIONS as a change by itself, whatever the path', function () {
    // a tokenless change from "another machine" is refused; what changes nothing passes
    const tokened = { accessToken: TOKEN, exemptLoopback: false }
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      for (const path of ['/good', '/GOOD', '/uploads/', '/no/such/route']) assert.equal(guardVerdict(tokened, { method, path }), 'token.required', `${method} ${path}`)
    }
    for (const method of ['GET', 'HEAD', 'OPTIONS']) assert.equal(guardVerdict(tokened, { method, path: '/generate' }), null, method)
  })
})

describe('the access token beyond loopback', function () {
  // exemptLoopback false: the spec's own loopback requests are treated as another machine's
  const lab = labInTempDir('token', { guard: { accessToken: TOKEN, exemptLoopback: false } })

  it('answers 401 token.required with WWW-Authenticate to a change without the token', async function () {
    const res = await request(lab.port, POST_GOOD)
    assert.equal(res.status, 401)
    assert.equal(res.body.error.type, 'token.required')
    assert.match(res.headers['www-authenticate'], /^Bearer/)
  })

  it('answers 401 token.invalid to a wrong token', async function () {
    const res = await request(lab.port, { ...POST_GOOD, headers: { ...POST_GOOD.headers, authorization: 'Bearer wrong-token-wrong-token' } })
    assert.equal(res.status, 401)
    assert.equal(res.body.error.type, 'token.invalid')
  })

  it('takes the token as a Bearer header, as X-Streamlab-Token, or as the cookie', async function () {
    for (const headers of [{ authorization: `Bearer ${TOKEN}` }, { 'x-streamlab-token': TOKEN }, { cookie: `other=1; streamlab_token=${TOKEN}` }]) {
      const res = await request(lab.port, { ...POST_GOOD, headers: { ...POST_GOOD.headers, ...headers } })
      assert.equal(res.status, 200, JSON.stringify(headers))
    }
  })

  it('trades the printed /?token= URL for an HttpOnly SameSite=Strict cookie and a clean URL', async function () {
    const res = await request(lab.port, { path: `/?token=${TOKEN}&projector=1` })
    assert.equal(res.status, 303)
    assert.equal(res.headers.location, '/?projector=1')
    const cookie = res.headers['set-cookie'].join(';')
    assert.match(cookie, new RegExp(`streamlab_token=${TOKEN}`))
    assert.match(cookie, /HttpOnly/)
    assert.match(cookie, /SameSite=Strict/)
    assert.equal((await request(lab.port, { path: '/?token=wrong-token-wrong-token' })).status, 401)
  })

  for (const path of ['//evil.example/', '///evil.example', '/\\evil.example', '/\\\\evil', '/\\/evil.example', '//\\evil.example', '/%2F%2Fevil.example', '/%5C%5Cevil', '//evil.example/x?y=1']) {
    it(`redirects the landing at ${path} to a path on this lab, never to another host`, async function () {
      const res = await request(lab.port, { path: `${path}${path.includes('?') ? '&' : '?'}token=${TOKEN}` })
      assert.equal(res.status, 303)
      // one slash then anything but a slash or a backslash: a path, where `//host` or `/\host` would be a host
      assert.match(res.headers.location, /^\/(?:[^/\\]|$)/, res.headers.location)
      assert.ok(!res.headers.location.includes('token='), 'the token is not in the address bar')
    })
  }

  it('leaves reads open', async function () {
    assert.equal((await request(lab.port, { path: '/experiments' })).status, 200)
    assert.equal((await request(lab.port, { path: '/' })).status, 200)
  })
})
