#!/usr/bin/env node
/**
 * npm run profile -- <doctor|heap|flame|snapshot> <route> [options]
 *
 * Profiles the lab (one process: scripts/profile/server.js) under a load of one
 * generated gzip body sent by autocannon's API (scripts/profile/load.js).
 * doctor, heap and flame run Clinic.js at a pinned version through npx: it is
 * unmaintained and pulls hundreds of packages (TensorFlow among them), so it
 * stays out of the project's install. Where Clinic cannot run (doctor on
 * Node >= 21.7) or fails, the same run falls back to Node's own profilers:
 * --heap-prof, --cpu-prof, and heap snapshots. `snapshot` is Node's alone.
 * Everything lands in test-data/profiles/<mode>-<route>-<timestamp>/, and the
 * end of the output says how to open each file.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { DEFAULTS, PROJECT_ROOT } from '../lib/options.js'
import { formatBytes, formatDuration, parseByteSize } from '../lib/units.js'
import { ensureInput } from '../lib/measure/inputs.js'
import { startListeningProcess } from '../lib/measure/lab-process.js'
import { readProcMemory, resetProcPeak } from '../lib/measure/proc-memory.js'
import { ROUTES, deleteUploadAnswered, describeLoad, runLoad } from './profile/load.js'

/** Clinic.js 13.0.0 is the last release (2023); pinned so every run downloads the same tree. */
export const CLINIC_VERSION = '13.0.0'
/** Clinic doctor 13 does not work from this Node on (shared/REFERENCES.md); heapprofiler and flame are tried anyway. */
const DOCTOR_LAST_WORKING = [21, 7]

export const PROFILES_DIR = path.join(DEFAULTS.dataDir, 'profiles')
const INPUT_DIR = path.join(PROFILES_DIR, 'inputs')
const SERVER = path.join(PROJECT_ROOT, 'scripts', 'profile', 'server.js')
const LOAD = path.join(PROJECT_ROOT, 'scripts', 'profile', 'load.js')
const STOP_GRACE_MS = 60_000
/**
 * Bytes between heap samples. Node's default, 512 KiB, leaves a few dozen samples for a short
 * load of small bodies; 32 KiB gives hundreds, so the lab's own frames show up.
 */
const HEAP_PROF_INTERVAL = 32 * 1024
const SNAPSHOT_TIMEOUT_MS = 300_000
const EXIT_USAGE = 2

export const MODES = Object.freeze({
  doctor: Object.freeze({ clinic: 'doctor', profilers: ['cpu', 'heap'], what: 'CPU, memory, event-loop delay and handles over time, with a diagnosis' }),
  heap: Object.freeze({ clinic: 'heapprofiler', profilers: ['heap'], what: 'which functions allocated the memory not yet collected at the end (sampling heap profiler)' }),
  flame: Object.freeze({ clinic: 'flame', profilers: ['cpu'], what: 'where CPU time goes, as a flame graph' }),
  snapshot: Object.freeze({ clinic: null, profilers: [], what: 'every object on the heap before, during and after the load' })
})

const DEFAULT_OPTIONS = Object.freeze({ size: '10MB', connections: '10', duration: '20' })

export function usage () {
  const modes = Object.entries(MODES).map(function line ([name, mode]) {
    const tool = mode.clinic ? `clinic ${mode.clinic}, else node ${mode.profilers.map(function flag (p) { return `--${p}-prof` }).join(' ')}` : 'node: v8.writeHeapSnapshot'
    return `  ${name.padEnd(9)} ${mode.what}\n            (${tool})`
  }).join('\n')
  const routes = Object.entries(ROUTES).map(function line ([name, route]) { return `  ${name.padEnd(14)} POST ${route.path}: ${route.what}` }).join('\n')
  return `Usage: npm run profile -- <mode> <route> [options]

Modes:
${modes}

Routes:
${routes}

Options:
  --size <bytes>       inflated size of the generated body, e.g. 200KB, 10MB, 100MB (default ${DEFAULT_OPTIONS.size})
  --connections <n>    concurrent connections (default ${DEFAULT_OPTIONS.connections})
  --duration <s>       seconds of load (default ${DEFAULT_OPTIONS.duration})
  --amount <n>         a number of requests instead of a duration
  --out <dir>          where results go (default test-data/profiles/<mode>-<route>-<timestamp>)
  --fallback           skip Clinic.js: Node's own --heap-prof / --cpu-prof
  -h, --help

Clinic.js ${CLINIC_VERSION} runs through npx (about 700 packages, downloaded once to npm's cache).
Examples:
  npm run profile -- heap bad
  npm run profile -- flame good --fallback --duration 10
  npm run profile -- snapshot bad --size 50MB --connections 4 --amount 20
`
}

function positiveInteger (name, text, min = 1) {
  const value = Number(text)
  if (!/^\d+$/.test(String(text)) || !Number.isSafeInteger(value) || value < min) {
    throw new TypeError(`--${name} takes an integer of ${min} or more, got "${text}"`)
  }
  return value
}

/**
 * Read the command line.
 * @param {string[]} argv what follows `npm run profile --`
 * @param {Date} [now] for the default output directory's name
 * @returns {{ help: true } | { mode: string, route: string, size: number, connections: number,
 *   duration: number, amount: number, out: string, fallback: boolean }}
 * @throws {TypeError} naming the bad mode, route or flag
 */
export function readProfileArgs (argv, now = new Date()) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      size: { type: 'string', default: DEFAULT_OPTIONS.size },
      connections: { type: 'string', default: DEFAULT_OPTIONS.connections },
      duration: { type: 'string', default: DEFAULT_OPTIONS.duration },
      amount: { type: 'string' },
      out: { type: 'string' },
      fallback: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return { help: true }
  const [mode, route, ...extra] = positionals
  if (mode === undefined) throw new TypeError('a mode and a route are needed, e.g. `npm run profile -- heap good`')
  if (!MODES[mode]) throw new TypeError(`unknown mode "${mode}": try ${Object.keys(MODES).join(', ')}`)
  if (route === undefined) throw new TypeError(`a route is needed after "${mode}": try ${Object.keys(ROUTES).join(', ')}`)
  if (!ROUTES[route]) throw new TypeError(`unknown route "${route}": try ${Object.keys(ROUTES).join(', ')}`)
  if (extra.length > 0) throw new TypeError(`unexpected "${extra.join(' ')}" after the route`)
  const size = parseByteSize(values.size)
  if (size < 1) throw new TypeError('--size must be at least 1 byte')
  const stamp = now.toISOString().replace(/[:.]/g, '-')
  return {
    mode,
    route,
    size,
    connections: positiveInteger('connections', values.connections),
    duration: positiveInteger('duration', values.duration),
    amount: values.amount === undefined ? 0 : positiveInteger('amount', values.amount),
    out: path.resolve(values.out ?? path.join(PROFILES_DIR, `${mode}-${route}-${stamp}`)),
    fallback: values.fallback
  }
}

/**
 * Why Clinic should not even be tried for this mode on this Node, or null.
 * @param {string} mode
 * @param {string} nodeVersion e.g. process.versions.node
 * @returns {string|null}
 */
export function clinicRefusal (mode, nodeVersion) {
  if (MODES[mode].clinic === null) return `${mode} is Node's own`
  const [major, minor] = nodeVersion.split('.').map(Number)
  const [lastMajor, lastMinor] = DOCTOR_LAST_WORKING
  if (mode === 'doctor' && (major > lastMajor || (major === lastMajor && minor >= lastMinor))) {
    return `clinic doctor is broken on Node >= ${lastMajor}.${lastMinor} (this is ${nodeVersion}); it works on Node 20`
  }
  return null
}

/** Doctor refuses to start while node_trace.*.log files lie in its working directory, and they are stale anyway. */
async function removeTraceLogs (dirs) {
  const removed = []
  for (const dir of dirs) {
    let names
    try {
      names = await fs.promises.readdir(dir)
    } catch (err) {
      if (err.code === 'ENOENT') continue
      throw err
    }
    for (const name of names) {
      if (!/^node_trace\.\d+\.log$/.test(name)) continue
      await fs.promises.rm(path.join(dir, name), { force: true })
      removed.push(path.join(dir, name))
    }
  }
  return removed
}

function shown (file) {
  return path.relative(PROJECT_ROOT, file) || '.'
}

/** A shell word: clinic runs --on-port through a shell. */
function shellQuote (text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${String(text).replace(/'/g, "'\\''")}'`
}

/**
 * Run `clinic <tool>` around scripts/profile/server.js, with the load as its --on-port command.
 * @returns {Promise<{ ok: boolean, reason: string|null, html: string|null, seconds: number, load: object|null }>}
 *   `html` is kept even when not `ok` (a report of an unhealthy load is still worth a look)
 */
async function runClinic (args, bodyFile, log) {
  const tool = MODES[args.mode].clinic
  const loadResult = path.join(args.out, 'load.json')
  const onPort = [
    process.execPath, LOAD, '--port', '$PORT', '--route', args.route, '--body', bodyFile,
    '--connections', String(args.connections),
    ...(args.amount > 0 ? ['--amount', String(args.amount)] : ['--duration', String(args.duration)]),
    '--result', loadResult, '--data-dir', labDataDir(args)
  ].map(function quoted (word) { return word === '$PORT' ? word : shellQuote(word) }).join(' ')
  const clinicArgs = [
    // --package, not a bare clinic@version: under `npx -p node@24` an inherited npm_config_package would win
    '--yes', `--package=clinic@${CLINIC_VERSION}`, '--', 'clinic', tool, '--open=false', '--dest', path.join(args.out, 'clinic'),
    '--on-port', onPort, '--', process.execPath, SERVER, '--data-dir', labDataDir(args)
  ]
  log(`running: NO_INSIGHT=1 npx ${clinicArgs.map(shellQuote).join(' ')}`)
  log('(the first run downloads Clinic.js into npm\'s cache: about a minute)')
  const started = Date.now()
  const output = []
  const child = spawn('npx', clinicArgs, {
    cwd: PROJECT_ROOT,
    // NO_INSIGHT: no question about usage statistics, which would wait for an answer forever
    env: { ...process.env, NO_INSIGHT: '1' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  function relay (stream) {
    return function onChunk (chunk) {
      output.push(chunk)
      stream.write(chunk)
    }
  }
  child.stdout.on('data', relay(process.stderr))
  child.stderr.on('data', relay(process.stderr))
  const { code, signal, spawnError } = await new Promise(function waitForClinic (resolve) {
    child.once('error', function failedToStart (err) { resolve({ code: null, signal: null, spawnError: err }) })
    child.once('close', function closed (exitCode, exitSignal) { resolve({ code: exitCode, signal: exitSignal }) })
  })
  const seconds = (Date.now() - started) / 1000
  const text = Buffer.concat(output).toString('utf8')
  await fs.promises.writeFile(path.join(args.out, 'clinic.log'), text)
  const load = await fs.promises.readFile(loadResult, 'utf8').then(JSON.parse, function noResult () { return null })
  const match = /Generated HTML file is (.+)$/m.exec(text)
  // doctor prints a file:// URL, the others a path relative to the working directory
  const printed = match?.[1].trim()
  const html = printed ? (printed.startsWith('file:') ? fileURLToPath(printed) : path.resolve(PROJECT_ROOT, printed)) : null
  let reason = null
  if (spawnError) reason = `npx could not start: ${spawnError.message}`
  else if (code !== 0) reason = `clinic ${tool} exited with ${signal ?? `code ${code}`} (its output is in ${shown(path.join(args.out, 'clinic.log'))})`
  else if (html === null || !fs.existsSync(html)) reason = `clinic ${tool} exited 0 but wrote no HTML report`
  else if (load === null) reason = 'the load under clinic did not finish'
  // a report of a lab answering 500 profiles the failure, not the route
  else if (load.non2xx > 0 || load.errors > 0) reason = `the load under clinic was not healthy: ${load.non2xx} non-2xx answers, ${load.errors} errors`
  return { ok: reason === null, reason, html: html && fs.existsSync(html) ? html : null, seconds, load }
}

/**
 * Start scripts/profile/server.js with Node flags, and wait until it listens. stop() sends SIGINT,
 * so the profilers write their files on the way out, and waits for them (SIGKILL after a minute).
 */
async function startProfileServer (nodeFlags, serverFlags = []) {
  const lab = await startListeningProcess([...nodeFlags, SERVER, ...serverFlags], { ipc: true, stopSignal: 'SIGINT', graceMs: STOP_GRACE_MS })
  return { ...lab, pid: lab.child.pid }
}

/** Sample the server's RSS from /proc while the load runs: the fallback's own memory timeline. */
function watchMemory (pid) {
  const idle = readProcMemory(pid)
  const peakReset = resetProcPeak(pid)
  const started = Date.now()
  const rows = []
  const timer = setInterval(function sample () {
    const memory = readProcMemory(pid)
    if (memory) rows.push([Date.now() - started, memory.rss, memory.peak])
  }, 250)
  return function stopWatching () {
    clearInterval(timer)
    const after = readProcMemory(pid)
    return {
      idleRss: idle?.rss ?? null,
      peakRss: idle && after && peakReset ? after.peak : null,
      csv: 'ms,rss_bytes,peak_rss_bytes\n' + rows.map(function line (row) { return row.join(',') }).join('\n') + '\n'
    }
  }
}

function progressLogger (log) {
  return function onProgress (p) {
    log(`  ${formatDuration(p.elapsedS * 1000)}: ${p.answered} answers${p.non2xx ? `, ${p.non2xx} non-2xx` : ''}`)
  }
}

/** Node's own profilers around the lab: --heap-prof and/or --cpu-prof, written when it exits. */
async function runNodeProfilers (args, body, log) {
  const profilers = MODES[args.mode].profilers
  const nodeFlags = []
  if (profilers.includes('heap')) nodeFlags.push('--heap-prof', `--heap-prof-dir=${args.out}`, `--heap-prof-interval=${HEAP_PROF_INTERVAL}`)
  if (profilers.includes('cpu')) nodeFlags.push('--cpu-prof', `--cpu-prof-dir=${args.out}`)
  log(`starting: node ${nodeFlags.map(function relative (flag) { return flag.replace(PROJECT_ROOT + path.sep, '') }).join(' ')} scripts/profile/server.js`)
  const lab = await startProfileServer(nodeFlags, ['--data-dir', labDataDir(args)])
  log(`the lab listens on ${lab.url} (pid ${lab.pid}); load: ${describePlan(args, body)}`)
  const stopWatching = watchMemory(lab.pid)
  let load
  let memory
  let exit
  try {
    load = await runLoad({ ...loadOptions(args, lab.url, body), onProgress: progressLogger(log) })
  } finally {
    memory = stopWatching()
    await fs.promises.writeFile(path.join(args.out, 'memory.csv'), memory.csv)
    log('stopping the lab (SIGINT): the profiles are written as it exits ...')
    exit = await lab.stop()
  }
  if (exit.killed || exit.code !== 0) {
    log(`the lab did not exit cleanly (${exit.signal ?? `code ${exit.code}`}): profiles may be missing\n${lab.output()}`)
  }
  return { load, memory }
}

/** Heap snapshots before, during and after the load, over IPC: no endpoint, no signal race. */
async function runSnapshots (args, body, log) {
  log('starting: node scripts/profile/server.js --snapshot-dir ' + shown(args.out))
  const lab = await startProfileServer([], ['--snapshot-dir', args.out, '--data-dir', labDataDir(args)])
  log(`the lab listens on ${lab.url} (pid ${lab.pid}); load: ${describePlan(args, body)}`)
  const snapshots = []
  function snapshot (label, idleWaitMs = 0) {
    log(`writing heap snapshot "${label}" (the lab stops while it is written) ...`)
    return new Promise(function waitForSnapshot (resolve, reject) {
      const timer = setTimeout(function tooSlow () {
        lab.child.removeListener('message', onMessage)
        reject(new Error(`heap snapshot "${label}" took more than ${SNAPSHOT_TIMEOUT_MS / 1000} s`))
      }, SNAPSHOT_TIMEOUT_MS)
      function onMessage (message) {
        if (message?.label !== label) return
        clearTimeout(timer)
        lab.child.removeListener('message', onMessage)
        if (message.type === 'snapshot-written') {
          log(`  ${shown(message.file)} in ${formatDuration(message.ms)}, ${message.inFlight} request(s) in flight`)
          snapshots.push(message)
          resolve(message)
        } else {
          reject(new Error(`heap snapshot "${label}" failed: ${message.message}`))
        }
      }
      lab.child.on('message', onMessage)
      lab.child.send({ type: 'snapshot', label, idleWaitMs })
    })
  }
  const stopWatching = watchMemory(lab.pid)
  let load
  let memory
  try {
    // one request first, so the lazy parts of the lab (parsers, pools) are in every picture alike
    const warm = await fetch(new URL(ROUTES[args.route].path, lab.url), {
      method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body
    })
    await deleteUploadAnswered(await warm.text(), labDataDir(args))
    log(`warm-up request: ${warm.status}`)
    await snapshot('before-load')
    let during = null
    load = await runLoad({
      ...loadOptions(args, lab.url, body),
      onProgress: progressLogger(log),
      onMidway: function snapshotAtPeak () {
        during = snapshot('during-load')
        // reported after the load, not as an unhandled rejection now
        during.catch(function later () {})
      }
    })
    if (during) await during
    // autocannon stops at the deadline with requests still being worked on: wait for them
    await snapshot('after-load', SNAPSHOT_TIMEOUT_MS / 2)
  } finally {
    memory = stopWatching()
    await fs.promises.writeFile(path.join(args.out, 'memory.csv'), memory.csv)
    const exit = await lab.stop()
    if (exit.killed || exit.code !== 0) log(`the lab did not exit cleanly (${exit.signal ?? `code ${exit.code}`})\n${lab.output()}`)
  }
  return { load, memory }
}

function loadOptions (args, url, body) {
  return { url, route: args.route, body, connections: args.connections, duration: args.duration, amount: args.amount, dataDir: labDataDir(args) }
}

/**
 * The profiled lab's data directory: its uploads land here, not in the test-data/uploads/ that
 * tests and other labs share, and it goes once the lab has stopped (an upload answered as the
 * load stops is never seen by the load, so never deleted by it).
 */
function labDataDir (args) {
  return path.join(args.out, 'lab-data')
}

function describePlan (args, body) {
  const length = args.amount > 0 ? `${args.amount} requests` : `${args.duration} s`
  return `POST ${ROUTES[args.route].path}, ${formatBytes(body.length)} of gzip (${formatBytes(args.size)} inflated), ` +
    `${args.connections} connections, ${length}`
}

/** What each kind of result is, and how to open it. */
const HOW_TO_OPEN = Object.freeze({
  '.html': 'open it in a browser (it is self-contained: no server needed)',
  '.heapprofile': 'Chrome DevTools, Memory tab: "Load profile" (or "Load"), pick the file; the Chart and ' +
    'Heavy (Bottom Up) views show which functions allocated the memory not yet collected when the lab stopped',
  '.cpuprofile': 'Chrome DevTools, Performance panel: "Load profile" (the upload arrow), pick the file; or ' +
    'More tools > JavaScript Profiler > Load, for the Chart, Heavy and Tree views',
  '.heapsnapshot': 'Chrome DevTools, Memory tab: "Load profile" (or "Load"), pick each file; select the ' +
    'later snapshot and choose "Comparison" against the earlier one to see what the load left behind',
  '.csv': 'the server\'s RSS every 250 ms during the load, read from /proc (ms, rss, kernel peak)'
})

/** `Heap.20260101.120000.4242.0.001.heapprofile`: thread 0 is the main thread, others the parse threads. */
function threadOf (name) {
  const match = /^(?:Heap|CPU)\.\d+\.\d+\.\d+\.(\d+)\.\d+\./.exec(name)
  if (!match) return ''
  return match[1] === '0' ? ' (main thread)' : ` (worker thread ${match[1]}: a parse thread)`
}

async function listResults (dir) {
  const results = []
  const names = await fs.promises.readdir(dir).catch(function none () { return [] })
  for (const name of names.sort()) {
    const ext = path.extname(name)
    if (!HOW_TO_OPEN[ext]) continue
    const stat = await fs.promises.stat(path.join(dir, name))
    results.push({ file: path.join(dir, name), bytes: stat.size, kind: ext, thread: threadOf(name) })
  }
  return results
}

/**
 * Run one profile.
 * @param {string[]} argv
 * @param {{ out?: NodeJS.WritableStream, err?: NodeJS.WritableStream }} [streams]
 * @returns {Promise<number>} the exit code
 */
export async function main (argv, { out = process.stdout, err = process.stderr } = {}) {
  let args
  try {
    args = readProfileArgs(argv)
  } catch (error) {
    err.write(`profile: ${error.message}\n\n${usage()}`)
    return EXIT_USAGE
  }
  if (args.help) {
    out.write(usage())
    return 0
  }
  function log (line) { err.write(`profile: ${line}\n`) }
  function say (line = '') { out.write(line + '\n') }

  await fs.promises.mkdir(args.out, { recursive: true })
  const stale = await removeTraceLogs([PROJECT_ROOT, args.out])
  if (stale.length > 0) log(`removed ${stale.length} stale node_trace.*.log file(s): ${stale.map(shown).join(', ')}`)
  const input = await ensureInput({ bytes: args.size, dir: INPUT_DIR }, log)
  const body = await fs.promises.readFile(input.file)
  log(`body: ${shown(input.file)} (${formatBytes(body.length)} gzip, ${formatBytes(args.size)} inflated)`)

  const mode = MODES[args.mode]
  const summary = { mode: args.mode, route: args.route, node: process.version, options: { ...args }, clinic: null, tool: null }
  let load = null
  let memory = null
  let clinicHtml = null
  const refusal = args.fallback ? 'skipped (--fallback)' : clinicRefusal(args.mode, process.versions.node)
  if (mode.clinic && refusal === null) {
    const clinic = await runClinic(args, input.file, log)
    summary.clinic = { version: CLINIC_VERSION, tool: mode.clinic, ok: clinic.ok, reason: clinic.reason, seconds: clinic.seconds, html: clinic.html && shown(clinic.html), load: clinic.load }
    // doctor moves its trace log away when it succeeds; one left behind would stop the next run
    const leftover = await removeTraceLogs([PROJECT_ROOT])
    if (leftover.length > 0) log(`removed ${leftover.length} node_trace.*.log file(s) clinic left in the project root`)
    clinicHtml = clinic.html
    if (clinic.ok) {
      log(`clinic ${mode.clinic} finished in ${formatDuration(clinic.seconds * 1000)}`)
      summary.tool = `clinic ${mode.clinic} ${CLINIC_VERSION}`
      load = clinic.load
    } else {
      log(`clinic ${mode.clinic} failed after ${formatDuration(clinic.seconds * 1000)}: ${clinic.reason}`)
      if (clinic.html) log(`its report is kept: ${shown(clinic.html)}`)
      if (clinic.load) log(`(under clinic) ${describeLoad(clinic.load)}`)
      log('falling back to Node\'s own profilers')
    }
  } else if (mode.clinic) {
    summary.clinic = { version: CLINIC_VERSION, tool: mode.clinic, ok: false, reason: refusal, seconds: 0, html: null }
    log(`not running clinic ${mode.clinic}: ${refusal}; using Node's own profilers`)
  }
  if (summary.tool === null) {
    const run = args.mode === 'snapshot' ? await runSnapshots(args, body, log) : await runNodeProfilers(args, body, log)
    load = run.load
    memory = run.memory
    summary.tool = args.mode === 'snapshot'
      ? 'node v8.writeHeapSnapshot'
      : `node ${mode.profilers.map(function flag (p) { return `--${p}-prof` }).join(' ')}`
  }

  await fs.promises.rm(labDataDir(args), { recursive: true, force: true })
  const results = await listResults(args.out)
  if (clinicHtml) results.unshift({ file: clinicHtml, bytes: fs.statSync(clinicHtml).size, kind: '.html', thread: '' })
  summary.load = load
  summary.memory = memory && { idleRss: memory.idleRss, peakRss: memory.peakRss }
  summary.files = results.map(function relative (r) { return { file: shown(r.file), bytes: r.bytes, kind: r.kind } })
  await fs.promises.writeFile(path.join(args.out, 'profile.json'), JSON.stringify(summary, null, 2) + '\n')

  say()
  say(`${args.mode} ${args.route}: ${summary.tool} on Node ${process.version}`)
  if (summary.clinic && !summary.clinic.ok) say(`clinic ${summary.clinic.tool}: ${summary.clinic.reason}`)
  if (load) say(describeLoad(load))
  else say('load: no result (the load script did not finish)')
  if (memory?.idleRss && memory.peakRss) {
    say(`server RSS: ${formatBytes(memory.idleRss)} before the load, peak ${formatBytes(memory.peakRss)} during it (kernel VmHWM)`)
  }
  say()
  say(`Results in ${shown(args.out)}/:`)
  for (const r of results) say(`  ${shown(r.file)}  ${formatBytes(r.bytes)}${r.thread}`)
  say()
  say('How to open them:')
  const kinds = [...new Set(results.map(function kind (r) { return r.kind }))]
  for (const kind of kinds) say(`  ${kind.padEnd(13)} ${HOW_TO_OPEN[kind]}`)
  if (kinds.some(function inDevTools (k) { return k !== '.html' && k !== '.csv' })) {
    say('  DevTools for files: open chrome://inspect, "Open dedicated DevTools for Node" (or any tab\'s DevTools).')
  }
  say(`  (summary: ${shown(path.join(args.out, 'profile.json'))})`)
  if (args.mode !== 'snapshot') say(`Every object on the heap before, during and after the load: npm run profile -- snapshot ${args.route}`)

  const profiles = results.filter(function isProfile (r) { return r.kind !== '.csv' })
  if (profiles.length === 0) {
    say('No profile was written: see the messages above.')
    return 1
  }
  if (!load || load.non2xx > 0 || load.errors > 0) return 1
  return 0
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(function setExitCode (code) {
    process.exitCode = code
  }, function failed (error) {
    console.error(`profile: ${error.stack ?? error.message}`)
    process.exitCode = 1
  })
}
