#!/usr/bin/env node
/**
 * npm run profile -- <doctor|heap|flame|snapshot> <route>: the lab (scripts/profile/server.js) under
 * a load of one generated gzip body (scripts/profile/load.js), profiled by Clinic.js at a pinned
 * version through npx (unmaintained, hundreds of packages: kept out of the install), or by Node's
 * own profilers where Clinic cannot run or fails. Results: test-data/profiles/<mode>-<route>-<time>/.
 */
import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { PROJECT_ROOT } from '../lib/config/options.js'
import { formatBytes, formatDuration, parseByteSize } from '../lib/util/units.js'
import { ensureInput } from '../lib/measure/inputs.js'
import { ROUTES, describeLoad } from './profile/load.js'
import { clinicRefusal, removeTraceLogs, runClinic } from './profile/clinic.js'
import { runNodeProfilers, runSnapshots } from './profile/node-profilers.js'
import { HOW_TO_OPEN, listResults } from './profile/results.js'
import { summarizeProfileFile, summaryLines } from './profile/cpu-summary.js'
import { collectionsLine, runSiteSampler, siteLines, topShareLine } from './profile/sites.js'
import { CLINIC_VERSION, INPUT_DIR, MODES, PROFILES_DIR, labDataDir, shown } from './profile/settings.js'
import { isMain, runScript, stamp } from './cli.js'

const DEFAULT_OPTIONS = Object.freeze({ size: '10MB', connections: '10', duration: '20' })

/** `node --heap-prof --cpu-prof`: a mode's fallback, as the output names it. */
function nodeProfilers (mode) {
  return `node ${mode.profilers.map(function flag (p) { return `--${p}-prof` }).join(' ')}`
}

function usage () {
  const modes = Object.entries(MODES).map(function line ([name, mode]) {
    const node = nodeProfilers(mode)
    const tool = mode.sampler
      ? `the lab's allocation sampler; --clinic: clinic ${mode.clinic}; --fallback: ${node}`
      : mode.clinic ? `clinic ${mode.clinic}, else ${node}` : 'node: v8.writeHeapSnapshot'
    return `  ${name.padEnd(9)} ${mode.what}\n            (${tool})`
  }).join('\n')
  const routes = Object.entries(ROUTES).map(function line ([name, route]) {
    return `  ${name.padEnd(14)} POST ${route.path}: ${route.what}`
  }).join('\n')
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
  --clinic             heap: Clinic.js's heapprofiler instead of the lab's sampler
  -h, --help

Clinic.js ${CLINIC_VERSION} runs through npx (about 700 packages, downloaded once to npm's cache).
Examples:
  npm run profile -- heap bad
  npm run profile -- flame good --fallback --duration 10
  npm run profile -- snapshot bad --size 50MB --connections 4 --amount 20`
}

function positiveInteger (name, text, min = 1) {
  const value = Number(text)
  if (!/^\d+$/.test(String(text)) || !Number.isSafeInteger(value) || value < min) {
    throw new TypeError(`--${name} takes an integer of ${min} or more, got "${text}"`)
  }
  return value
}

/** The command line (null for --help); `now` names the default output folder. */
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
      clinic: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return null
  const [mode, route, ...extra] = positionals
  if (mode === undefined) throw new TypeError('a mode and a route are needed, e.g. `npm run profile -- heap good`')
  if (!MODES[mode]) throw new TypeError(`unknown mode "${mode}": try ${Object.keys(MODES).join(', ')}`)
  if (route === undefined) throw new TypeError(`a route is needed after "${mode}": try ${Object.keys(ROUTES).join(', ')}`)
  if (!ROUTES[route]) throw new TypeError(`unknown route "${route}": try ${Object.keys(ROUTES).join(', ')}`)
  if (extra.length > 0) throw new TypeError(`unexpected "${extra.join(' ')}" after the route`)
  if (values.clinic && values.fallback) throw new TypeError('--clinic and --fallback: one or the other')
  if (values.clinic && !MODES[mode].sampler) throw new TypeError(`--clinic is for heap: ${mode} runs Clinic.js already, unless --fallback`)
  const size = parseByteSize(values.size)
  if (size < 1) throw new TypeError('--size must be at least 1 byte')
  return {
    mode,
    route,
    size,
    connections: positiveInteger('connections', values.connections),
    duration: positiveInteger('duration', values.duration),
    amount: values.amount === undefined ? 0 : positiveInteger('amount', values.amount),
    out: path.resolve(values.out ?? path.join(PROFILES_DIR, `${mode}-${route}-${stamp(now)}`)),
    fallback: values.fallback,
    clinic: values.clinic
  }
}

/** One profile: 1 when no profile was written or the load saw errors. */
async function main (args) {
  function log (line) { process.stderr.write(`profile: ${line}\n`) }
  function say (line = '') { process.stdout.write(line + '\n') }

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
  let sites = null
  if (mode.sampler && !args.clinic && !args.fallback) {
    sites = await runSiteSampler(args, body, log)
    load = sites.load
    memory = sites.memory
    summary.tool = 'the lab\'s allocation sampler (lib/allocation/)'
    const { windows, allocatedBytes, heldPeak, collections } = sites
    summary.sites = { file: shown(sites.file), windows, allocatedBytes, heldPeak, collections, top: sites.sites.slice(0, 10) }
  } else if (mode.clinic && refusal === null) {
    const clinic = await runClinic(args, input.file, log)
    const { ok, reason, seconds } = clinic
    summary.clinic = { version: CLINIC_VERSION, tool: mode.clinic, ok, reason, seconds, html: clinic.html && shown(clinic.html) }
    summary.clinic.load = clinic.load
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
    summary.tool = args.mode === 'snapshot' ? 'node v8.writeHeapSnapshot' : nodeProfilers(mode)
  }

  await fs.promises.rm(labDataDir(args), { recursive: true, force: true })
  const results = await listResults(args.out)
  if (clinicHtml) results.unshift({ file: clinicHtml, bytes: fs.statSync(clinicHtml).size, kind: '.html', thread: '' })
  summary.load = load
  summary.memory = memory && { idleRss: memory.idleRss, peakRss: memory.peakRss }
  summary.files = results.map(function relative (r) { return { file: shown(r.file), bytes: r.bytes, kind: r.kind } })
  const cpu = []
  for (const r of results) {
    if (r.kind !== '.cpuprofile') continue
    const thread = r.thread.replace(/^ \((.*)\)$/, '$1') || path.basename(r.file)
    cpu.push({ thread, ...await summarizeProfileFile(r.file) })
  }
  if (cpu.length > 0) summary.cpu = cpu
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
  if (sites !== null) {
    say(`Which lines allocated the bytes and which hold them, over the load (${sites.windows} windows of 2 s; ${shown(sites.file)}):`)
    for (const line of siteLines(sites.sites)) say(line)
    say(topShareLine(sites.route, sites.sites, sites.allocatedBytes, sites.heldPeak))
    say(collectionsLine(sites.collections))
    say('  the same view as the dashboard\'s "Which code holds it"; what the sampler cannot see: docs/metrics.md')
    say()
  }
  if (cpu.length > 0) {
    say('Where each thread\'s CPU went, by the first kind of work its stack names (scripts/profile/cpu-summary.js):')
    for (const t of cpu) for (const line of summaryLines(t.thread, t)) say(`  ${line}`)
    say('  (a sampled thread that waits for a core counts that wait as the work it was doing: with more busy')
    say('  threads than cores, /proc/<pid>/task/*/stat tells CPU time apart from waiting)')
    say()
  }
  say('How to open them:')
  const kinds = [...new Set(results.map(function kind (r) { return r.kind }))]
  for (const kind of kinds) say(`  ${kind.padEnd(13)} ${HOW_TO_OPEN[kind]}`)
  if (kinds.some(function inDevTools (k) { return k !== '.html' && k !== '.csv' && k !== '.json' })) {
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

if (isMain(import.meta.url)) runScript('profile', { usage: usage(), readOptions: readProfileArgs, run: main })
