/**
 * The lab's own load is let in by the key its run was issued: a lab open to
 * the network (an access token, clients treated as other machines) runs an
 * experiment whose load process carries no token, and every upload gets
 * through; a key nobody issued, or one revoked when its run ended, opens nothing.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { randomBytes } from 'node:crypto'
import zlib from 'node:zlib'
import { createEngine } from '../lib/experiments/engine.js'
import { RUN_KEY_HEADER, createRunKeys, currentRunKey, runKeyHeaders } from '../lib/limits/run-keys.js'
import { labInTempDir } from './helpers.js'

const TOKEN = 'a-token-of-at-least-16-characters'
const GZ = zlib.gzipSync('{"items":[{"id":1}]}')

async function call (url, { method = 'GET', body, headers = {} } = {}) {
  const init = { method, headers: { ...headers } }
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  const res = await fetch(url, init)
  return { status: res.status, body: await res.json() }
}

/** POST a small gzipped document to /good with these headers (and no token). */
async function postGood (url, headers) {
  const res = await fetch(`${url}/good`, { method: 'POST', headers: { 'content-type': 'application/gzip', ...headers }, body: GZ })
  return { status: res.status, body: await res.json() }
}

describe('a keyring of run keys', function () {
  it('issues 32 random bytes as base64url, a different key each time', function () {
    const keys = createRunKeys()
    const a = keys.issue()
    const b = keys.issue()
    assert.match(a, /^[A-Za-z0-9_-]{43}$/)
    assert.equal(Buffer.from(a, 'base64url').length, 32)
    assert.notEqual(a, b)
    assert.equal(keys.live, 2)
  })

  it('holds a key from its issue to its revocation, and nothing else', function () {
    const keys = createRunKeys()
    const key = keys.issue()
    assert.equal(keys.holds(key), true)
    for (const other of [randomBytes(32).toString('base64url'), '', key.slice(1), `${key} `, undefined, 42, ['x'], 'x'.repeat(10000)]) {
      assert.equal(keys.holds(other), false, String(other).slice(0, 60))
    }
    keys.revoke(key)
    assert.equal(keys.holds(key), false)
    assert.equal(keys.live, 0)
  })

  it('holds only its own keys: another app\'s keyring knows nothing of them', function () {
    const key = createRunKeys().issue()
    assert.equal(createRunKeys().holds(key), false)
  })
})

describe('the engine and run keys', function () {
  it('runs each experiment inside its own key\'s scope, and revokes the key when the run ends', async function () {
    const runKeys = createRunKeys()
    const seen = []
    const registry = {
      probe: {
        name: 'probe',
        params: [],
        normalizeParams: function normalizeParams () { return {} },
        run: async function run () {
          await new Promise(function later (resolve) { setImmediate(resolve) })
          seen.push({ key: currentRunKey(), headers: runKeyHeaders(), held: runKeys.holds(currentRunKey()) })
          return { ok: true }
        }
      }
    }
    const events = new EventEmitter()
    const engine = createEngine({ options: {}, events, registry, runKeys })
    const ended = new Promise(function waitForResult (resolve) { events.on('experiment', function onEvent (e) { if (e.phase === 'result') resolve() }) })
    engine.start('probe', {}, { baseUrl: 'http://127.0.0.1:1' })
    await ended
    assert.equal(seen.length, 1)
    assert.equal(seen[0].held, true, 'the key is live while the run runs')
    assert.deepEqual(seen[0].headers, { [RUN_KEY_HEADER]: seen[0].key })
    assert.equal(runKeys.holds(seen[0].key), false, 'revoked once the run ended')
    assert.equal(runKeys.live, 0)
    assert.equal(currentRunKey(), null, 'outside a run there is no key')
    assert.deepEqual(runKeyHeaders(), {})
  })
})

describe('an experiment on a lab open to the network', function () {
  // exemptLoopback false: the spec's own loopback requests, and the load's, are treated as another machine's
  const lab = labInTempDir('run-keys', { guard: { accessToken: TOKEN, exemptLoopback: false } })

  it('runs ingest with the token, and its load process gets every upload through with its run key', async function () {
    this.timeout(120000)
    const started = await call(`${lab.url}/experiments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: { name: 'ingest', params: { bytes: '100KB', concurrency: 2, requests: 4 } }
    })
    assert.equal(started.status, 202, JSON.stringify(started.body))
    let run
    do {
      await new Promise(function wait (resolve) { setTimeout(resolve, 100) })
      run = (await call(`${lab.url}/experiments/${started.body.id}`)).body
    } while (run.status === 'running')
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    for (const [route, result] of Object.entries(run.result.routes)) {
      assert.ok(result.ok > 0, `${route}: ${JSON.stringify(result.errors)}`)
      assert.equal(result.ok, result.requests, `${route}: ${JSON.stringify(result.errors)}`)
      assert.equal(result.errors['token.required'], undefined, route)
      assert.equal(result.errors['token.invalid'], undefined, route)
    }
    assert.equal(lab.app.locals.runKeys.live, 0, 'the run\'s key is revoked')
  })

  it('refuses a made-up run key with 401 token.invalid', async function () {
    const res = await postGood(lab.url, { [RUN_KEY_HEADER]: randomBytes(32).toString('base64url') })
    assert.equal(res.status, 401)
    assert.equal(res.body.error.type, 'token.invalid')
  })

  it('takes a live key in place of the token, and refuses it with 401 once revoked', async function () {
    const keys = lab.app.locals.runKeys
    const key = keys.issue()
    try {
      const live = await postGood(lab.url, { [RUN_KEY_HEADER]: key })
      assert.equal(live.status, 200, JSON.stringify(live.body))
    } finally {
      keys.revoke(key)
    }
    const revoked = await postGood(lab.url, { [RUN_KEY_HEADER]: key })
    assert.equal(revoked.status, 401)
    assert.equal(revoked.body.error.type, 'token.invalid')
  })
})
