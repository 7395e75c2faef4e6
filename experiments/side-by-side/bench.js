/**
 * `npm run bench -- side-by-side`: given gzip documents sent one upload at a time, round by round,
 * to a fresh lab's POST /good and, with --seed, to another server's POST /good started beside it
 * (the seed project's server.js, say): each server's wall MB/s, its process's CPU seconds per GB
 * read from outside (lib/measure/cpu.js) and, for the lab, its peak above idle over the upload.
 * Documents of other shapes (lines, minified, the seed's own) measured in one run, side by side;
 * with --variant, the lab's design choices too (a lab started with other server flags).
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { positiveInteger } from '../../lib/measure/args.js'
import { cpuPerGB, processCpuSeconds, spread } from '../../lib/measure/cpu.js'
import { closePeakWindow, openPeakWindow } from '../../lib/measure/lab-memory.js'
import { startLabProcess } from '../../lib/measure/lab-process.js'
import { median } from '../../lib/measure/stats.js'
import { fixed, markdownTable } from '../../lib/measure/table.js'
import { uploadFile } from '../../lib/experiments/upload-client.js'

export const name = 'side-by-side'
export const summary = 'gzip documents into a fresh lab\'s /good and another server\'s, round by round: MB/s, CPU s per GB, memory'

export const usage = `Options (side-by-side):
  --file FILE         a gzip JSON document (repeatable): each is sent once a round to every server
  --seed SCRIPT       another server, started as PORT=N node SCRIPT, answering POST /good with
                      { processedBytes } (the seed project's server.js); without it, the lab alone
  --variant=FLAGS     another fresh lab started with these server flags (repeatable), e.g.
                      --variant=--no-simd or --variant=--parse-threads=1: a design compared with
                      the lab's defaults in the same rounds
  --repeat N          rounds (default 3); medians reported
  Each upload alone, one connection; the lab is started with no memory limit and room for the largest file.`

export const options = Object.freeze({
  file: { type: 'string', multiple: true, default: [] },
  seed: { type: 'string' },
  variant: { type: 'string', multiple: true, default: [] },
  repeat: { type: 'string' }
})

/** Normalise parsed flags; a TypeError names the bad flag. */
export function normalize (given) {
  const files = given.file ?? []
  if (files.length === 0) throw new TypeError('--file names at least one gzip document')
  for (const file of files) if (!fs.existsSync(file)) throw new TypeError(`--file ${file}: no such file`)
  if (given.seed !== undefined && !fs.existsSync(given.seed)) throw new TypeError(`--seed ${given.seed}: no such file`)
  const variants = (given.variant ?? []).map(function flagsOf (text) { return text.split(' ').filter(Boolean) })
  for (const flags of variants) {
    if (flags.length === 0 || !flags[0].startsWith('--')) {
      throw new TypeError(`--variant takes server flags such as "--parse-threads=1", got ${JSON.stringify(flags.join(' '))}`)
    }
  }
  return { files, seed: given.seed ?? null, variants, repeat: positiveInteger('repeat')(given.repeat ?? '3') }
}

async function freePort () {
  const server = net.createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address()
  server.close()
  await once(server, 'close')
  return port
}

/** The other server: started, waited for until it answers, stopped by stop(). */
async function startSeed (script) {
  const port = await freePort()
  const child = spawn(process.execPath, [path.basename(script)], {
    cwd: path.dirname(path.resolve(script)), env: { ...process.env, PORT: String(port) }, stdio: 'ignore'
  })
  const url = `http://127.0.0.1:${port}`
  for (let tries = 0; tries < 100; tries++) {
    try {
      await fetch(url)
      break
    } catch {
      await sleep(100)
    }
  }
  return {
    url,
    pid: child.pid,
    stop: async function stopSeed () {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  }
}

/** One upload of `file`: wall MB/s, CPU s per GB of the server's process, the lab's peak above idle. */
async function measureUpload (server, file) {
  const window = server.lab ? await openPeakWindow(server) : null
  const cpuBefore = processCpuSeconds(server.pid)
  const answer = await uploadFile(`${server.url}/good`, file, server.headers)
  const cpu = processCpuSeconds(server.pid)
  if (answer.status !== 200) throw new Error(`${server.name} /good answered ${answer.status} to ${file}: ${JSON.stringify(answer.body)}`)
  const bytes = server.lab ? answer.body.summary.inflatedBytes : answer.body.processedBytes
  const memory = window ? await closePeakWindow(window, server) : { peakAboveIdle: null }
  return {
    bytes,
    mbPerSecond: bytes / 1e6 / (answer.ms / 1000),
    cpuPerGB: cpuBefore === null || cpu === null ? null : cpuPerGB(cpu - cpuBefore, bytes),
    peakAboveIdle: memory.peakAboveIdle,
    items: server.lab ? answer.body.summary.items : answer.body.approximateItems
  }
}

/**
 * Run it: the servers started once, a round not counted, then `repeat` rounds of every file to every server in turn.
 * @returns {Promise<{ title: string, markdown: string, charts: object[], data: object }>}
 */
export async function run (opts, report) {
  const largest = Math.max(...opts.files.map(function size (f) { return fs.statSync(f).size }))
  const room = String(Math.max(2 ** 31, 20 * largest))
  const labFlags = ['--no-request-peak', '--memory-limit=0', '--limit-inflated', room, '--limit-compressed', room]
  const labs = []
  const servers = []
  let seed = null
  try {
    // the lab with its defaults, then each variant: fresh processes, each sent every file in turn
    for (const flags of [[], ...(opts.variants ?? [])]) {
      const lab = await startLabProcess([...labFlags, ...flags])
      labs.push(lab)
      // named by its flags, each value after a space: a figures link picks a cell by `target=...`
      const name = ['lab', ...flags].join(' ').replaceAll('=', ' ')
      servers.push({ name, lab: true, url: lab.url, get pid () { return lab.pid }, headers: { 'content-type': 'application/gzip' } })
    }
    if (opts.seed !== null) {
      seed = await startSeed(opts.seed)
      servers.push({ name: 'seed', lab: false, url: seed.url, pid: seed.pid, headers: { 'content-type': 'application/octet-stream' } })
    }
    // a round first that is not counted, every file to every server: each one's streaming path is
    // compiled and its threads warm, as the bound's stages are timed after a warm-up pass
    const total = (opts.repeat + 1) * opts.files.length * servers.length
    let done = 0
    for (const file of opts.files) {
      for (const server of servers) {
        report({ type: 'progress', done: done++, total, label: `${server.name} ${path.basename(file)} warm-up` })
        await measureUpload(server, file)
      }
    }
    const runs = new Map()
    for (let round = 0; round < opts.repeat; round++) {
      for (const file of opts.files) {
        for (const server of servers) {
          const label = `${server.name} ${path.basename(file)} round ${round + 1}/${opts.repeat}`
          report({ type: 'progress', done: done++, total, label })
          const key = `${server.name}\n${file}`
          if (!runs.has(key)) runs.set(key, { target: server.name, file: path.basename(file), runs: [] })
          runs.get(key).runs.push(await measureUpload(server, file))
        }
      }
    }
    report({ type: 'progress', done, total, label: 'done' })
    return sideBySideReport([...runs.values()].map(summarise), opts.repeat)
  } finally {
    await seed?.stop()
    for (const lab of labs) await lab.stop()
  }
}

function summarise (cell) {
  function pick (field) {
    const present = cell.runs.map(function value (r) { return r[field] }).filter(function isNumber (v) { return typeof v === 'number' })
    return present.length === 0 ? null : median(present)
  }
  return {
    ...cell,
    mbPerSecond: pick('mbPerSecond'),
    cpuPerGB: pick('cpuPerGB'),
    cpuSpread: spread(cell.runs.map(function cpu (r) { return r.cpuPerGB })),
    peakAboveIdle: pick('peakAboveIdle'),
    bytes: cell.runs[0].bytes,
    items: cell.runs[0].items
  }
}

/**
 * The report: a row per server and document, then each document's lab MB/s over the seed's and
 * over the first document's.
 * @param {object[]} cells summarised cells
 * @param {number} repeat
 */
export function sideBySideReport (cells, repeat) {
  function text (value, digits = 1) { return typeof value === 'number' ? fixed(value, digits) : 'n/a' }
  const rows = cells.map(function row (c) {
    const apart = c.cpuSpread === null ? 'n/a' : `${fixed(100 * c.cpuSpread, 0)}%`
    const peak = c.peakAboveIdle === null ? 'n/a' : text(c.peakAboveIdle / 1048576)
    const rounds = c.runs.map(function mbps (r) { return fixed(r.mbPerSecond) }).join(', ')
    return [c.target, c.file, text(c.bytes / 1e6), text(c.mbPerSecond), text(c.cpuPerGB, 2), apart, peak, rounds]
  })
  const labCells = cells.filter(function isLab (c) { return c.target === 'lab' })
  const variantNotes = cells.filter(function isVariant (c) { return c.target.startsWith('lab --') }).map(function against (c) {
    const lab = labCells.find(function same (l) { return l.file === c.file })
    return `- ${c.target} on ${c.file}: ${fixed(c.mbPerSecond / lab.mbPerSecond, 2)}x the lab's MB/s, ` +
      `${fixed(c.cpuPerGB / lab.cpuPerGB, 2)}x its CPU s/GB`
  })
  const notes = labCells.map(function ratios (c) {
    const seed = cells.find(function same (s) { return s.target === 'seed' && s.file === c.file })
    const first = labCells[0]
    const parts = [seed ? `${fixed(c.mbPerSecond / seed.mbPerSecond, 2)}x the seed's MB/s` : null,
      c === first ? null : `${fixed(c.mbPerSecond / first.mbPerSecond, 2)}x the lab's MB/s on ${first.file}`].filter(Boolean)
    return parts.length ? `- lab on ${c.file}: ${parts.join('; ')}` : null
  }).filter(Boolean)
  notes.push(...variantNotes)
  notes.push(`- medians of ${repeat} round${repeat === 1 ? '' : 's'} after one not counted, each upload alone on one connection; ` +
    'CPU: the server process\'s, every thread, ' +
    'from /proc/<pid>/stat over the upload; CPU apart: how far the rounds\' CPU s/GB are apart; peak: the lab worker\'s VmHWM above idle')
  const headings = ['server', 'document', 'MB inflated', 'MB/s', 'CPU s/GB', 'CPU apart', 'peak above idle MiB', 'MB/s of each round']
  const table = markdownTable(headings, rows)
  return { title: 'Documents into /good, side by side', markdown: `${table}\n\n${notes.join('\n')}\n`, charts: [], data: { repeat, cells } }
}
