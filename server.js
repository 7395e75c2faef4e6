#!/usr/bin/env node
// Entry point, the one place that reads the environment and flags: it runs the supervisor, which owns the
// listening socket and runs the lab in a worker under a memory budget, as a container's OOM killer would.
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import { parseArgs } from 'node:util'
import { DATABASE_DEFAULTS, normalizeDatabaseOptions, redactUrl } from './lib/db/options.js'
import { optionsFromFlags, parseArgsOptions, usage } from './lib/config/flags.js'
import { DEFAULTS, normalizeOptions } from './lib/config/options.js'
import { SERVER_DEFAULTS } from './lib/http/server.js'
import { HUB_DEFAULTS } from './lib/metrics/hub-options.js'
import { SUPERVISOR_DEFAULTS, normalizeSupervisorOptions } from './lib/supervisor/options.js'
import { createSupervisor } from './lib/supervisor/supervisor.js'
import { describeCrash } from './lib/supervisor/crash-record.js'
import { formatMemory } from './lib/util/units.js'
// the upload flags' defaults from their own file, not the registry: the supervisor loads no experiment
import { UPLOAD_DEFAULTS } from './experiments/upload/server.js'

/** Every default a flag can change, nested as the options are (the app's under `app`): the help prints these. */
const LAB_DEFAULTS = Object.freeze({
  ...SUPERVISOR_DEFAULTS,
  app: Object.freeze({ ...DEFAULTS, server: SERVER_DEFAULTS, metrics: HUB_DEFAULTS, upload: UPLOAD_DEFAULTS, database: DATABASE_DEFAULTS })
})

/** Exit code for bad usage, as most CLIs do. */
const EXIT_USAGE = 2

/** The app's own check of the URL (lib/db/options.js), reworded to name the flag or variable it came from. */
function checkDatabaseUrl (database, app, source) {
  try {
    normalizeDatabaseOptions(database, app)
  } catch (err) {
    if (!(err instanceof TypeError)) throw err
    const given = JSON.stringify(redactUrl(database.url))
    throw new TypeError(`${source} must be a postgres:// or postgresql:// URL, got ${given}`, { cause: err })
  }
}

/** Whether an address only this machine can reach. */
function isLoopback (host) {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/** The addresses other machines may reach a lab bound to `host` by, for the printed URLs. */
function reachableAddresses (host) {
  if (host !== '0.0.0.0' && host !== '::') return [host]
  const found = []
  for (const entries of Object.values(os.networkInterfaces())) {
    for (const entry of entries ?? []) if (!entry.internal && entry.family === 'IPv4') found.push(entry.address)
  }
  return found.length > 0 ? found : [host]
}

/** The supervisor's options from flags and environment, with the rules that join several; a TypeError is a usage error. */
function readConfig (argv, env) {
  const { values } = parseArgs({ args: argv, options: parseArgsOptions() })
  if (values.help || values['help-all']) {
    console.log(usage(LAB_DEFAULTS, { all: values['help-all'] === true }))
    process.exit(0)
  }
  if (values['no-memory-limit'] && values['memory-limit'] !== undefined) {
    throw new TypeError('give --memory-limit or --no-memory-limit, not both')
  }
  const { app, ...supervisor } = optionsFromFlags(values, env)
  const host = supervisor.host ?? LAB_DEFAULTS.host
  app.guard = {
    allowedHosts: app.guard?.allowedHosts ?? [],
    boundHost: host,
    // beyond loopback, other machines need a token for changes; one is made if none is given
    accessToken: app.guard?.accessToken ?? (isLoopback(host) ? null : randomBytes(24).toString('base64url'))
  }
  // checked here, so that a bad flag is a usage error and not a worker that dies at birth
  const checked = normalizeOptions(app)
  if (app.database) checkDatabaseUrl(app.database, checked, values['database-url'] === undefined ? 'DATABASE_URL' : '--database-url')
  const config = normalizeSupervisorOptions({ ...supervisor, host, app })
  if (app.unsafeBad && config.memoryLimit === 0) {
    throw new TypeError('--unsafe-bad needs a memory budget: without one a zip bomb takes the whole host down, ' +
      'not just the worker (drop --memory-limit=0, or give e.g. --memory-limit 512MiB)')
  }
  return config
}

async function main () {
  let config
  try {
    config = readConfig(process.argv.slice(2), process.env)
  } catch (err) {
    console.error(`streamlab: ${err.message}\n${usage(LAB_DEFAULTS)}`)
    process.exitCode = EXIT_USAGE
    return
  }
  const supervisor = createSupervisor(config)
  const budget = config.memoryLimit === 0 ? 'no memory budget' : `memory budget ${formatMemory(config.memoryLimit)}`

  supervisor.on('listening', function announce ({ address, port, pid }) {
    const shown = address.includes(':') ? `[${address}]` : address
    const base = `http://${shown}:${port}`
    // lib/measure/lab-process.js waits for this line and reads the worker's pid from it
    console.log(`streamlab listening on ${base} (worker pid ${pid}, ${budget})`)
    console.log(`  GET  ${base}/generate?size=10000&save=1   generate test-data/test.json.gz`)
    console.log(`  POST ${base}/bad                           buffered ingest${config.app.unsafeBad ? ' (UNSAFE: no inflate limit)' : ''}`)
    console.log(`  POST ${base}/good                          streamed ingest`)
    const token = config.app.guard.accessToken
    if (token !== null && !isLoopback(address)) {
      for (const reachable of reachableAddresses(address)) {
        const shownAt = reachable.includes(':') ? `[${reachable}]` : reachable
        console.log(`  open http://${shownAt}:${port}/?token=${token}   (changes from other machines need this token)`)
      }
    }
    if (address !== '127.0.0.1' && address !== '::1') {
      console.warn(`  warning: bound to ${address}, reachable from other machines; the lab accepts hostile bodies by design`)
    }
  })
  supervisor.on('crash', function reportBackoff (crash) {
    // said now: a worker that dies at birth never gets to 'restarted'
    if (crash.requestCaused) return
    const when = crash.backoffMs === 0 ? 'at once' : `in ${crash.backoffMs} ms (backing off: it died with no request in flight)`
    console.warn(`streamlab: ${describeCrash(crash)}; restarting ${when}`)
  })
  supervisor.on('restarted', function reportRestart (crash) {
    const backoff = crash.backoffMs > 0 ? ` after a ${crash.backoffMs} ms backoff` : ''
    console.log(`streamlab: ${describeCrash(crash)}; restarted in ${crash.restartMs} ms (worker pid ${crash.newPid})${backoff}`)
  })
  supervisor.on('stopping', function reportStop ({ reason }) {
    console.log(`streamlab: ${reason}, closing`)
  })
  supervisor.on('warning', function reportWarning (err) {
    console.warn(`streamlab: ${err.message}`)
  })

  function stopOnSignal (signal) {
    supervisor.stop(signal)
  }
  process.on('SIGINT', stopOnSignal)
  process.on('SIGTERM', stopOnSignal)

  try {
    await supervisor.start()
  } catch (err) {
    console.error(`streamlab: cannot start on ${config.host}:${config.port}: ${err.message}`)
    process.exitCode = 1
    process.off('SIGINT', stopOnSignal)
    process.off('SIGTERM', stopOnSignal)
  }
}

main()
