/**
 * The db-export experiment on a lab open to the network, where every client
 * counts as another machine's: an export without the token is refused, and a
 * run with it exports through its client process with the run's key, which
 * is revoked when the run ends. On the embedded PGlite, or on the PostgreSQL
 * server in STREAMLAB_TEST_DATABASE_URL (.ci/run does that too).
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { REAL_URL, SIZES, getJson, runExperiment } from '../db-helpers.js'
import { startLab } from '../helpers.js'

describe('the db-export experiment on a lab open to the network', function () {
  // exemptLoopback false: the spec's loopback requests, and the client process's, count as another machine's
  const TOKEN = 'a-db-export-token-of-enough-length'
  let lab
  let dataDir

  before(async function () {
    this.timeout(90_000)
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-db-remote-'))
    lab = await startLab({
      dataDir,
      guard: { accessToken: TOKEN, exemptLoopback: false },
      database: REAL_URL ? { url: REAL_URL, seed: SIZES } : { pgliteDir: 'memory://', seed: SIZES }
    })
  })

  after(async function () {
    this.timeout(30_000)
    await lab?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('refuses an export without the token', async function () {
    const res = await getJson(`${lab.url}/db/batch?limit=1`)
    assert.equal(res.status, 401, res.text)
  })

  it('runs with the token, its client process exporting with the run key', async function () {
    this.timeout(90_000)
    const state = await runExperiment(lab.url, { name: 'db-export', params: { rows: 3000, batchSizes: '3000', highWaterMarks: '3000' } }, { authorization: `Bearer ${TOKEN}` })
    assert.equal(state.status, 'done', JSON.stringify(state.error))
    for (const cell of state.result.cells) assert.ok(cell.totalMs > 0, `${cell.mode} exported`)
    assert.equal(lab.app.locals.runKeys.live, 0, 'the run\'s key is revoked')
  })
})
