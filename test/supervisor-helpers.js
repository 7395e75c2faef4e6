/**
 * What the supervisor's specs share: small restart backoffs, a worker script
 * that records what the supervisor sent it and can die at birth, a zip bomb
 * for the unsafe /bad, a wait on a condition, and an experiment run followed
 * to its end.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { uploadStreams } from '../lib/experiments/upload-client.js'
import { createBomb } from '../lib/generate/bombs.js'
import { pollJson } from './helpers.js'

const WORKER = fileURLToPath(new URL('../worker.js', import.meta.url))
/** Small backoffs: the specs read the delays from the crash records, never from a clock. */
export const QUICK_BACKOFF = Object.freeze({ restartBackoffMs: 20, maxRestartBackoffMs: 80 })

/**
 * A worker script that is the lab's own, except that it writes the options the supervisor sent it
 * to `listen-<pid>.json` in `dir`, and exits with code 1 at birth while `dir/die-at-birth` exists.
 * @returns {{ script: string, dir: string, dieAtBirth: (on: boolean) => void, listenOptions: (pid: number) => object, remove: () => void }}
 */
export function createTestWorker () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-worker-'))
  const script = path.join(dir, 'test-worker.mjs')
  const marker = path.join(dir, 'die-at-birth')
  // the static import registers the real worker's listeners first, so it misses no message
  fs.writeFileSync(script, `import fs from 'node:fs'
import ${JSON.stringify(pathToFileURL(WORKER).href)}
if (fs.existsSync(${JSON.stringify(marker)})) process.exit(1)
process.on('message', function recordListen (message) {
  if (message?.type === 'listen') fs.writeFileSync(${JSON.stringify(dir)} + '/listen-' + process.pid + '.json', JSON.stringify(message.options))
})
`)
  return {
    script,
    dir,
    dieAtBirth: function dieAtBirth (on) {
      if (on) fs.writeFileSync(marker, '')
      else fs.rmSync(marker, { force: true })
    },
    listenOptions: function listenOptions (pid) {
      return JSON.parse(fs.readFileSync(path.join(dir, `listen-${pid}.json`), 'utf8'))
    },
    remove: function remove () { fs.rmSync(dir, { recursive: true, force: true }) }
  }
}

/** POST a bomb that inflates to 2 GB; on /bad (unsafe) the answer is a dead connection. */
export function sendBomb (url) {
  const bomb = createBomb({ variant: 'ratio', bytes: '2GB' })
  return uploadStreams(url, bomb.streams, bomb.uploadHeaders)
}

/** Poll `test()` every 20 ms until it holds; past `timeoutMs`, fail naming `what`. */
export async function waitUntil (test, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(function pause (resolve) { setTimeout(resolve, 20) })
  }
}

/** Start an experiment with POST /experiments and follow it with GET /experiments/:id until it ends. */
export async function runExperiment (url, { name, params }) {
  const res = await fetch(`${url}/experiments`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, params }) })
  const started = await res.json()
  assert.equal(res.status, 202, JSON.stringify(started))
  return pollJson(`${url}/experiments/${started.id}`, function ended (run) { return run.status !== 'running' }, 60000)
}
