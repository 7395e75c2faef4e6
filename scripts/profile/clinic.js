/** Clinic.js for the profiler, pinned and fetched through npx: whether it can run here, and `clinic <tool>` around the lab. */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { CLINIC_VERSION, DOCTOR_LAST_WORKING, LOAD, MODES, SERVER, labDataDir, shown } from './settings.js'

/** Why Clinic should not even be tried for this mode on this Node (process.versions.node), or null. */
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
export async function removeTraceLogs (dirs) {
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

/** A shell word: clinic runs --on-port through a shell. */
function shellQuote (text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${String(text).replace(/'/g, "'\\''")}'`
}

/** `clinic <tool>` around scripts/profile/server.js, the load its --on-port command; `html` is kept even when not `ok`. */
export async function runClinic (args, bodyFile, log) {
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
  const logFile = path.join(args.out, 'clinic.log')
  await fs.promises.writeFile(logFile, text)
  const load = await fs.promises.readFile(loadResult, 'utf8').then(JSON.parse, function noResult () { return null })
  const match = /Generated HTML file is (.+)$/m.exec(text)
  // doctor prints a file:// URL, the others a path relative to the working directory
  const printed = match?.[1].trim()
  const html = printed ? (printed.startsWith('file:') ? fileURLToPath(printed) : path.resolve(PROJECT_ROOT, printed)) : null
  let reason = null
  if (spawnError) reason = `npx could not start: ${spawnError.message}`
  else if (code !== 0) reason = `clinic ${tool} exited with ${signal ?? `code ${code}`} (its output: ${shown(logFile)})`
  else if (html === null || !fs.existsSync(html)) reason = `clinic ${tool} exited 0 but wrote no HTML report`
  else if (load === null) reason = 'the load under clinic did not finish'
  // a report of a lab answering 500 profiles the failure, not the route
  else if (load.non2xx > 0 || load.errors > 0) reason = `the load under clinic: ${load.non2xx} non-2xx answers, ${load.errors} errors`
  return { ok: reason === null, reason, html: html && fs.existsSync(html) ? html : null, seconds, load }
}
