/**
 * What the database specs share: the database they run on (the embedded
 * PGlite, or the PostgreSQL server in STREAMLAB_TEST_DATABASE_URL) and its
 * seeded sizes, an experiment run to its end, JSON and NDJSON answers, GET
 * /db/status polled until a state comes, and URLs for pg.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'

/** The PostgreSQL server to test on (.ci/with-postgres sets it), or null for the embedded PGlite. */
export const REAL_URL = process.env.STREAMLAB_TEST_DATABASE_URL || null
/** The seeded sizes of the export specs' database. */
export const SIZES = Object.freeze({ desks: 2000, items: 100_000 })

/**
 * Start an experiment and wait for it to end (GET /experiments/:id until it is not running).
 * @returns {Promise<object>} the run's final state
 */
export async function runExperiment (url, body, headers = {}) {
  const started = await fetch(`${url}/experiments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body)
  })
  assert.equal(started.status, 202, await started.clone().text())
  const { id } = await started.json()
  let state
  do {
    await delay(100)
    state = (await getJson(`${url}/experiments/${id}`)).body
  } while (state.status === 'running')
  return state
}

/** GET a JSON answer: status, headers, text and body. */
export async function getJson (url, headers) {
  const res = await fetch(url, { headers })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) }
}

/** The rows of an NDJSON answer. */
export function ndjsonRows (text) {
  return text.split('\n').filter(Boolean).map(function parse (line) { return JSON.parse(line) })
}

/**
 * Poll GET /db/status until `done(status)` or the time is up, and return the
 * last status either way (the caller's assertion says what was wrong). The
 * limit is generous: it costs nothing when the state comes, and on a busy
 * machine an export or a pool takes seconds to settle.
 */
export async function statusWhen (url, done, ms = 30_000) {
  const until = Date.now() + ms
  let status
  do {
    status = (await getJson(`${url}/db/status`)).body
    if (done(status)) return status
    await delay(50)
  } while (Date.now() < until)
  return status
}

/**
 * Wait until the lab has heard that the embedded database `pid` exited (GET
 * /db/status no longer shows it). SIGKILL returns before the process is gone:
 * on a busy machine a request sent at once can still connect to the dying
 * process and be reset (503 database.unavailable, ECONNRESET), where the lab
 * restarts the database only for a refused connection or a missing socket.
 */
export async function waitForDeath (url, pid) {
  const status = await statusWhen(url, function gone (s) { return s.embedded.pid !== pid })
  assert.notEqual(status.embedded.pid, pid, `the lab heard that PGlite ${pid} died`)
}

/** Whether GET /db/status shows no export running and every pooled connection idle. */
export function settled (status) {
  return status.exports.active.length === 0 && status.pool.total === status.pool.idle && status.pool.waiting === 0
}

/** A postgres:// URL for pg options: a Unix socket's directory goes in `?host=`. */
export function embeddedUrl ({ host, port, user, password, database }) {
  return `postgres://${user}:${encodeURIComponent(password)}@localhost/${database}?host=${encodeURIComponent(host)}&port=${port}`
}

/** A URL on which nothing listens: a port the kernel gave us, then closed. */
export async function closedPortUrl () {
  const probe = net.createServer()
  probe.listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const { port } = probe.address()
  probe.close()
  await once(probe, 'close')
  return `postgres://postgres@127.0.0.1:${port}/postgres`
}
