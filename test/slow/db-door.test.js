/**
 * The embedded database's door: pglite-socket itself lets anyone
 * who reaches its socket in as superuser, so the lab puts it on a Unix socket
 * in a directory only its own OS user may enter (loopback TCP on Windows),
 * behind a random password (SCRAM-SHA-256), and tells clients neither where
 * it is nor any path on disk.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { startEmbedded } from '../../lib/db/embedded.js'
import { expectedRow } from '../seeded-rows.js'
import { labInTempDir, waitFor } from '../helpers.js'

const SIZES = Object.freeze({ desks: 20, items: 500 })
const POSIX = process.platform !== 'win32'

async function getJson (url) {
  const res = await fetch(url)
  const text = await res.text()
  return { status: res.status, text, body: JSON.parse(text) }
}

/**
 * Fail if `text` holds a place: a path on disk (one of `known`, or anything
 * shaped like an absolute path), a socket's name, or a loopback address with
 * its port.
 */
function assertNoLocation (text, known = []) {
  for (const place of [...known, os.tmpdir(), process.cwd()]) {
    assert.ok(!text.includes(place), `${JSON.stringify(place)} is not shown: ${text}`)
  }
  assert.doesNotMatch(text, /(^|[\s"'(=])\/[^\s"'/]+\/[^\s"']/, 'no absolute POSIX path')
  assert.doesNotMatch(text, /[A-Za-z]:\\/, 'no absolute Windows path')
  assert.doesNotMatch(text, /PGSQL/, 'no socket name')
  assert.doesNotMatch(text, /127\.0\.0\.1:\d|localhost:\d/, 'no loopback port')
}

/** The TCP ports a process listens on, from /proc (Linux): its socket inodes in the kernel's tables. */
function listeningTcpPorts (pid) {
  const inodes = new Set()
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    const link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`, { throwIfNoEntry: false })
    const match = /^socket:\[(\d+)\]$/.exec(link ?? '')
    if (match) inodes.add(match[1])
  }
  const ports = []
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!fs.existsSync(table)) continue
    for (const line of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/)
      // local_address is hex ip:port, st 0A is LISTEN, the tenth field the inode
      if (fields[3] === '0A' && inodes.has(fields[9])) ports.push(parseInt(fields[1].split(':')[1], 16))
    }
  }
  return ports
}

/**
 * A client that ignores the password request: the startup message and a
 * query at once. Resolves with the type bytes of every message it got
 * before the server closed the connection, and the ErrorResponse's SQLSTATE.
 */
function skipThePassword (connectOptions) {
  return new Promise(function talk (resolve, reject) {
    const params = Buffer.from('user\0postgres\0database\0postgres\0\0')
    const startup = Buffer.alloc(8 + params.length)
    startup.writeInt32BE(startup.length, 0)
    startup.writeInt32BE(196608, 4)
    params.copy(startup, 8)
    const sql = Buffer.from('SELECT count(*) FROM items\0')
    const query = Buffer.alloc(5 + sql.length)
    query.write('Q', 0)
    query.writeInt32BE(4 + sql.length, 1)
    sql.copy(query, 5)
    const socket = net.connect(connectOptions)
    const chunks = []
    socket.on('connect', function sendBoth () { socket.write(Buffer.concat([startup, query])) })
    socket.on('data', function keep (chunk) { chunks.push(chunk) })
    socket.on('error', reject)
    socket.setTimeout(10_000, function stalled () {
      socket.destroy()
      reject(new Error('the server neither answered nor closed the connection'))
    })
    socket.on('close', function parse () {
      const bytes = Buffer.concat(chunks)
      const types = []
      let sqlState = null
      for (let at = 0; at + 5 <= bytes.length; at += 1 + bytes.readInt32BE(at + 1)) {
        const type = String.fromCharCode(bytes[at])
        types.push(type)
        if (type === 'E') sqlState = /C([0-9A-Z]{5})\0/.exec(bytes.subarray(at + 5, at + 1 + bytes.readInt32BE(at + 1)).toString())?.[1] ?? null
      }
      resolve({ types, sqlState })
    })
  })
}

async function refusedWith (connection) {
  const client = new pg.Client(connection)
  client.on('error', function ignoreLateError () {})
  try {
    await client.connect()
  } catch (err) {
    return err
  } finally {
    await client.end().catch(function alreadyClosed () {})
  }
  assert.fail(`let in as ${connection.user} with the wrong password`)
}

describe('the embedded database\'s door', function () {
  this.timeout(60_000)

  describe('on a Unix socket in a private directory (every platform but Windows)', function () {
    const lab = labInTempDir('db-door', { database: { pgliteDir: 'memory://', seed: SIZES } })
    let connection

    before(async function () {
      if (!POSIX) this.skip()
      // the first request starts (and seeds) the database
      const first = await getJson(`${lab.url}/db/batch?limit=1`)
      assert.equal(first.status, 200, first.text)
      connection = lab.app.locals.database.embeddedConnection()
    })

    it('listens on a socket only the lab\'s OS user can reach, and on no TCP port', function () {
      assert.ok(path.isAbsolute(connection.host), 'pg reaches it through a directory')
      const dir = fs.statSync(connection.host)
      assert.equal(dir.mode & 0o777, 0o700, 'the directory is private')
      assert.equal(dir.uid, process.getuid())
      const socket = fs.statSync(path.join(connection.host, `.s.PGSQL.${connection.port}`))
      assert.ok(socket.isSocket())
      assert.equal(socket.mode & 0o077, 0, 'nobody else may open the socket either')
      if (fs.existsSync('/proc/self/fd')) {
        const { pid } = lab.app.locals.database.status().embedded
        assert.deepEqual(listeningTcpPorts(pid), [], 'no TCP port at all')
      }
    })

    it('is out of reach of another OS user (run as root: tried as nobody)', function () {
      if (process.getuid() !== 0) this.skip()
      const probe = 'const s = require("node:net").connect(process.argv[1]);' +
        ' s.on("connect", function connected () { console.log("connected"); s.destroy() });' +
        ' s.on("error", function refused (err) { console.log(err.code) })'
      const tried = spawnSync(process.execPath, ['-e', probe, path.join(connection.host, `.s.PGSQL.${connection.port}`)],
        { uid: 65534, gid: 65534, cwd: '/', encoding: 'utf8', timeout: 10_000 })
      // a Node that only root can run (npx's copy under /root, say) cannot try as nobody: nothing to learn then
      if (tried.error || (tried.status !== 0 && !tried.stdout)) this.skip()
      assert.equal(tried.stdout.trim(), 'EACCES', tried.stderr)
    })

    it('refuses a pg client with a wrong password, whatever the user name', async function () {
      for (const wrong of [{ password: 'not-the-password-at-all' }, { user: 'mallory', password: 'not-the-password-at-all' }]) {
        const err = await refusedWith({ ...connection, ...wrong })
        assert.equal(err.code, '28P01', err.message)
        assert.match(err.message, /password authentication failed/)
      }
    })

    it('answers a client that skips the password with a FATAL error, not with PGlite', async function () {
      const answer = await skipThePassword({ path: path.join(connection.host, `.s.PGSQL.${connection.port}`) })
      assert.deepEqual(answer.types, ['R', 'E'], 'the SASL request, then the refusal: no AuthenticationOk, no rows')
      assert.equal(answer.sqlState, '08P01')
    })

    it('lets the lab\'s own pool in: /db/batch and /db/stream still answer', async function () {
      const batch = await getJson(`${lab.url}/db/batch?offset=3&limit=2`)
      assert.equal(batch.status, 200, batch.text)
      assert.deepEqual(batch.body, [expectedRow(4, SIZES.desks), expectedRow(5, SIZES.desks)])
      const stream = await getJson(`${lab.url}/db/stream?limit=${SIZES.items}&highWaterMark=64`)
      assert.equal(stream.status, 200, stream.text)
      assert.equal(stream.body.length, SIZES.items)
      assert.deepEqual(stream.body.at(-1), expectedRow(SIZES.items, SIZES.desks))
    })

    it('shows in GET /db/status how it is reached, not where', async function () {
      const { status, text, body } = await getJson(`${lab.url}/db/status`)
      assert.equal(status, 200)
      assert.equal(body.target, 'embedded PGlite (in memory)')
      assert.deepEqual(Object.keys(body.embedded).sort(), ['auth', 'peakRss', 'pid', 'rss', 'storage', 'transport'])
      assert.deepEqual([body.embedded.storage, body.embedded.transport, body.embedded.auth], ['memory', 'unix', 'SCRAM-SHA-256'])
      assertNoLocation(text, [connection.host, lab.dataDir, connection.password])
    })

    it('starts a new database, behind a new door, by the second request after the old one is killed', async function () {
      const before = lab.app.locals.database.status().embedded.pid
      const oldDir = connection.host
      process.kill(before, 'SIGKILL')
      // at once: the pool's idle connection may not know yet (a 503 naming no place), or a new one
      // meets a refused socket (ECONNREFUSED) or none (ENOENT): either way the next start follows
      let next = await getJson(`${lab.url}/db/batch?offset=9&limit=1`)
      if (next.status === 503) {
        assert.equal(next.body.error.type, 'database.unavailable')
        assertNoLocation(next.text, [oldDir])
        next = await getJson(`${lab.url}/db/batch?offset=9&limit=1`)
      }
      assert.equal(next.status, 200, next.text)
      assert.deepEqual(next.body, [expectedRow(10, SIZES.desks)])
      const now = lab.app.locals.database.embeddedConnection()
      assert.notEqual(lab.app.locals.database.status().embedded.pid, before)
      assert.notEqual(now.host, oldDir)
      assert.notEqual(now.password, connection.password, 'a new password for every start')
      await waitFor(function oldDoorRemoved () { return !fs.existsSync(oldDir) })
      connection = now
    })
  })

  describe('errors that reach a client', function () {
    const lab = labInTempDir('db-door-locked', { database: { seed: SIZES, startTimeoutMs: 30_000 } })
    const warned = []
    let warn

    before(function () {
      // another process holds the database's directory: starting fails with a message that names it
      const dir = path.join(lab.dataDir, 'pglite')
      fs.mkdirSync(dir, { recursive: true })
      fs.writeFileSync(path.join(dir, 'owner.json'), JSON.stringify({ pid: process.pid }))
      warn = console.warn
      console.warn = function keepWarning (...args) { warned.push(args.join(' ')) }
    })
    after(function () {
      console.warn = warn
    })

    it('name the database without its paths on disk; the server\'s log keeps them', async function () {
      const res = await getJson(`${lab.url}/db/batch?limit=1`)
      assert.equal(res.status, 503, res.text)
      assert.equal(res.body.error.type, 'database.unavailable')
      assert.match(res.body.error.message, /embedded PGlite \(on disk\).*in use by process/)
      assertNoLocation(res.text, [lab.dataDir])
      const status = await getJson(`${lab.url}/db/status`)
      assert.equal(status.body.state, 'failed')
      assert.match(status.body.error, /<pgliteDir> is in use/)
      assertNoLocation(status.text, [lab.dataDir])
      assert.ok(warned.some(function namesTheDir (line) { return line.includes(path.join(lab.dataDir, 'pglite')) }),
        `the log says which directory: ${warned.join('\n')}`)
    })
  })

  describe('on loopback TCP (Windows, or a temporary directory too long for a socket)', function () {
    let embedded

    before(async function () {
      embedded = await startEmbedded({ dir: 'memory://', timeoutMs: 60_000, transport: 'tcp' })
    })
    after(async function () {
      await embedded?.stop()
    })

    it('refuses a wrong password, and lets the right one in', async function () {
      assert.equal(embedded.transport, 'tcp')
      assert.equal(embedded.connection.host, '127.0.0.1')
      const err = await refusedWith({ ...embedded.connection, password: 'guessed-but-wrong-0000' })
      assert.equal(err.code, '28P01')
      const client = new pg.Client({ ...embedded.connection })
      await client.connect()
      try {
        assert.deepEqual((await client.query('SELECT 6 * 7 AS answer')).rows, [{ answer: 42 }])
      } finally {
        await client.end()
      }
    })

    it('answers a client that skips the password with a FATAL error, not with PGlite', async function () {
      const answer = await skipThePassword({ host: '127.0.0.1', port: embedded.connection.port })
      assert.deepEqual(answer.types, ['R', 'E'])
      assert.equal(answer.sqlState, '08P01')
    })
  })
})
