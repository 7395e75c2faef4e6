#!/usr/bin/env node
/**
 * Differential fuzzing over HTTP: mutated gzip and JSON bodies (bit flips, truncations, insertions,
 * splices) to /bad and /good in random-sized writes; no 5xx, no dropped connection, the same
 * decision and summary. A failing input is saved under test-data/fuzz/ for --replay.
 */
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import zlib from 'node:zlib'
import { parseArgs } from 'node:util'
import { createApp } from '../app.js'
import { createLabServer } from '../lib/http/server.js'
import { DEFAULTS } from '../lib/config/options.js'
import { prng, randomRecords, serialise, mutate, mutateGzip } from '../lib/measure/mutate.js'
import { formatDuration } from '../lib/util/units.js'
import { isMain, runScript } from './cli.js'

const FUZZ_DIR = path.join(DEFAULTS.dataDir, 'fuzz')
const FORMATS = ['json', 'array', 'ndjson']
const USAGE = 'Usage: npm run fuzz -- [--iterations N] [--seed S] [--replay FILE]'

/** POST `body` in writes of random sizes; resolve with status and JSON. */
function send (port, route, body, rand) {
  return new Promise(function exchange (resolve) {
    const headers = { 'content-type': 'application/gzip', 'content-length': body.length }
    const options = { host: '127.0.0.1', port, path: `/${route}`, method: 'POST', agent: false, headers }
    const req = http.request(options, function onResponse (res) {
      const parts = []
      res.on('data', function keep (c) { parts.push(c) })
      res.on('end', function done () {
        let json = null
        try {
          json = JSON.parse(Buffer.concat(parts))
        } catch {
          // judged below: a non-JSON answer is a failure
        }
        resolve({ status: res.statusCode, json })
      })
    })
    req.on('error', function failed (err) { resolve({ status: 0, error: err.code ?? err.message }) })
    let at = 0
    function writeSome () {
      if (at >= body.length) return req.end()
      const size = 1 + Math.floor(rand() * (rand() < 0.5 ? 16 : 4096))
      req.write(body.subarray(at, at + size))
      at += size
      setImmediate(writeSome)
    }
    writeSome()
  })
}

/** @returns {string|null} why the two answers disagree, or null */
export function judge (bad, good) {
  for (const [route, res] of [['bad', bad], ['good', good]]) {
    if (res.status === 0) return `/${route} dropped the connection (${res.error})`
    if (res.status >= 500) return `/${route} answered ${res.status}`
    if (res.json === null) return `/${route} answered no JSON`
  }
  const badOk = bad.status === 200
  const goodOk = good.status === 200
  if (badOk !== goodOk) {
    return `accept/reject differ: /bad ${bad.status} ${bad.json.error?.type ?? ''}, /good ${good.status} ${good.json.error?.type ?? ''}`
  }
  if (badOk && JSON.stringify(bad.json.summary) !== JSON.stringify(good.json.summary)) return 'summaries differ'
  return null
}

/** One input for iteration k: a mutated JSON text or mutated gzip bytes. */
function makeInput (rand) {
  const format = FORMATS[Math.floor(rand() * FORMATS.length)]
  const text = serialise(rand, randomRecords(rand), format)
  const r = rand()
  if (r < 0.2) return zlib.gzipSync(text)
  if (r < 0.6) return zlib.gzipSync(mutate(rand, text))
  const other = zlib.gzipSync(serialise(rand, randomRecords(rand), format))
  return mutateGzip(rand, zlib.gzipSync(text), other)
}

/** A lab in this process for `use(port)`, closed after. */
async function withLab (use) {
  const app = createApp()
  const server = createLabServer(app)
  await new Promise(function listening (resolve) { server.listen(0, '127.0.0.1', resolve) })
  try {
    return await use(server.address().port)
  } finally {
    server.closeAllConnections()
    await new Promise(function closed (resolve) { server.close(resolve) })
    await app.close()
  }
}

/** `iterations` inputs against a lab in this process: counts, and the failures ({ k, why, file }). */
export async function fuzz ({ iterations, seed, save = true, log = function quiet () {} }) {
  const rand = prng(seed)
  const result = { iterations, accepted: 0, rejected: 0, failures: [] }
  await withLab(async function inputs (port) {
    for (let k = 0; k < iterations; k++) {
      const body = makeInput(rand)
      const bad = await send(port, 'bad', body, rand)
      const good = await send(port, 'good', body, rand)
      const why = judge(bad, good)
      if (bad.status === 200) result.accepted++
      else result.rejected++
      if (why) {
        let file = null
        if (save) {
          await fs.promises.mkdir(FUZZ_DIR, { recursive: true })
          file = path.join(FUZZ_DIR, `seed${seed}-k${k}.gz`)
          await fs.promises.writeFile(file, body)
        }
        result.failures.push({ k, why, file })
        log(`FAIL ${k}: ${why}${file ? ` (saved ${path.relative(process.cwd(), file)})` : ''}`)
      }
      const progress = `${result.accepted} accepted, ${result.rejected} rejected, ${result.failures.length} failures`
      if ((k + 1) % Math.max(1, Math.floor(iterations / 10)) === 0) log(`${k + 1}/${iterations}: ${progress}`)
    }
  })
  return result
}

async function replay (file) {
  const body = await fs.promises.readFile(file)
  await withLab(async function both (port) {
    const rand = prng(1)
    const bad = await send(port, 'bad', body, rand)
    const good = await send(port, 'good', body, rand)
    console.log(JSON.stringify({ bad, good, verdict: judge(bad, good) ?? 'agree' }, null, 2))
  })
  return 0
}

function readOptions (argv) {
  const options = {
    iterations: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '1' },
    replay: { type: 'string' },
    help: { type: 'boolean', short: 'h' }
  }
  const { values } = parseArgs({ args: argv, options })
  if (values.help) return null
  const iterations = Number(values.iterations)
  const seed = Number(values.seed)
  if (!Number.isInteger(iterations) || iterations < 1 || !Number.isInteger(seed)) {
    throw new TypeError('--iterations takes a positive integer and --seed an integer')
  }
  return { iterations, seed, replay: values.replay }
}

async function main ({ iterations, seed, replay: file }) {
  if (file) return replay(file)
  const started = Date.now()
  const result = await fuzz({ iterations, seed, log: function print (line) { process.stderr.write(line + '\n') } })
  console.log(`${result.iterations} inputs in ${formatDuration(Date.now() - started)}: ` +
    `${result.accepted} accepted by both, ${result.rejected} rejected by /bad, ${result.failures.length} failures`)
  return result.failures.length === 0 ? 0 : 1
}

if (isMain(import.meta.url)) runScript('fuzz', { usage: USAGE, readOptions, run: main })
