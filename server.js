#!/usr/bin/env node
/**
 * Entry point: the one place that reads the environment and flags. It runs
 * the supervisor (`lib/supervisor/supervisor.js`), which owns the listening socket and
 * runs the lab in a worker process under a memory budget, as a container's
 * OOM killer would.
 */
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import { parseArgs } from 'node:util'
import { normalizeDatabaseOptions, redactUrl } from './lib/db/options.js'
import { defaultMemoryBudget } from './lib/limits/memory-budget.js'
import { normalizeOptions } from './lib/config/options.js'
import { createSupervisor, describeCrash, formatMemory, normalizeSupervisorOptions } from './lib/supervisor/supervisor.js'
import { parseByteSize } from './lib/util/units.js'

const DEFAULT_BUDGET = defaultMemoryBudget()

const USAGE = `Usage: node server.js [options]
  --port N               port to listen on (env PORT, default 3000)
  --host ADDRESS         address to bind (env HOST, default 127.0.0.1)
  --limit-compressed SZ  largest compressed body, both routes (default 512MiB)
  --limit-inflated SZ    largest inflated body, both routes (default 500MiB)
  --parse-threads N      worker threads that parse /good's batches (default: cores, at most 4)
  --buffer-budget SZ     inflate and parse buffers /good may hold across all requests (default 16MiB)
  --parse-cost SZ        heap JSON.parse may be projected to take for one of /good's batches;
                         a denser record is refused with 413 record.too.dense (default 12MiB)
  --limit-record SZ      largest single record /good gathers for a parse thread (default 4MiB)
  --queue-timeout T      how long a queued /good request waits on a stuck queue (no pipeline free, none moving) before 503 (default 10s)
  --share-parse MODE     where /good parses a small body's document past 16 KiB: busy (on an idle parse
                         thread while requests wait for the main thread), always, never (default busy)
  --database-url URL     a PostgreSQL server for /db (env DATABASE_URL; default: embedded PGlite)
  --disk-quota SZ        bytes the lab may keep in test-data/ (uploads, saves); past it, 507 (default 2GiB)
  --upload-max-age T     at start, remove uploads older than T: 60m, 90s; 0 keeps them (default 60m)
  --no-request-peak      never reset the kernel's peak RSS per request (for external measurement)

Who may drive the lab (docs/security.md):
  --allowed-hosts LIST   host names to answer to besides localhost, *.localhost and IP addresses;
                         .example.com for a domain and its subdomains, all for any (env STREAMLAB_ALLOWED_HOSTS)
  --access-token TOKEN   the token other machines need for changes (env STREAMLAB_TOKEN); bound beyond
                         loopback (--host 0.0.0.0) the lab makes a random one and prints it

Slow or many clients: each limit answers (408 or 503 JSON), none just drops the connection:
  --body-idle-timeout T  a body that sends nothing for T gets 408 (default 10s; 0: no limit)
  --min-body-rate SZ     bytes/s a body must average over 10 s of reading, else 408 (default 4KiB; 0: none)
  --max-connections N    open connections; past N a new one gets 503 and is closed (default 512)
  --max-metrics-streams N  GET /metrics streams at once; past N, 503 (default 64)

The lab runs in a worker process; this one watches its memory like a container would:
  --memory-limit SZ      kill the worker (SIGKILL) when its RSS passes SZ, then restart it
                         on the same port (default: a quarter of this machine's memory, at
                         least 1 GiB; here: ${formatMemory(DEFAULT_BUDGET)}; 0 or --no-memory-limit: no budget)
  --unsafe-bad           /bad without its inflate limit, so a zip bomb really kills the
                         worker (refused without a memory budget)
Crashes never stop the supervisor. One a request caused is restarted at once; those with no
request in flight (a worker dying at birth) at once, then after a delay that doubles:
  --restart-backoff T    the first delay: 250ms, 2s; a bare number is seconds (default 250ms)
  --max-restart-backoff T  the longest delay (default 10s)
  --restart-window T     a worker up this long starts the delays again (default 60s)`

/** Exit code for bad usage, as most CLIs do. */
const EXIT_USAGE = 2

function parseDuration (text, flag) {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(String(text).trim())
  if (match === null) throw new TypeError(`${flag} takes a duration like 60s, 2m or 500ms, got "${text}"`)
  const unit = { ms: 1, s: 1000, m: 60_000 }[match[2] ?? 's']
  return Math.round(Number(match[1]) * unit)
}

/** A cap given on the command line: a whole number from 1 to `max`. */
function parseLimitCount (text, flag, max) {
  if (!/^[1-9]\d{0,8}$/.test(text) || Number(text) > max) throw new TypeError(`${flag} takes a whole number from 1 to ${max}, got "${text}"`)
  return Number(text)
}

/** The app's own check of the URL (lib/db/options.js), reworded to name the flag or variable it came from. */
function checkDatabaseUrl (database, app, source) {
  try {
    normalizeDatabaseOptions(database, app)
  } catch (err) {
    if (!(err instanceof TypeError)) throw err
    throw new TypeError(`${source} must be a postgres:// or postgresql:// URL, got ${JSON.stringify(redactUrl(database.url))}`, { cause: err })
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

function readConfig (argv, env) {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'limit-compressed': { type: 'string' },
      'limit-inflated': { type: 'string' },
      'parse-threads': { type: 'string' },
      'buffer-budget': { type: 'string' },
      'parse-cost': { type: 'string' },
      'limit-record': { type: 'string' },
      'queue-timeout': { type: 'string' },
      'share-parse': { type: 'string' },
      'database-url': { type: 'string' },
      'disk-quota': { type: 'string' },
      'upload-max-age': { type: 'string' },
      'no-request-peak': { type: 'boolean' },
      'allowed-hosts': { type: 'string' },
      'access-token': { type: 'string' },
      'body-idle-timeout': { type: 'string' },
      'min-body-rate': { type: 'string' },
      'max-connections': { type: 'string' },
      'max-metrics-streams': { type: 'string' },
      'memory-limit': { type: 'string' },
      'no-memory-limit': { type: 'boolean' },
      'unsafe-bad': { type: 'boolean' },
      // gone, kept to say what replaced it
      'max-restarts': { type: 'string' },
      'restart-backoff': { type: 'string' },
      'max-restart-backoff': { type: 'string' },
      'restart-window': { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) {
    console.log(USAGE)
    process.exit(0)
  }
  const port = Number(values.port ?? env.PORT ?? 3000)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new TypeError(`port must be an integer from 0 to 65535, got ${values.port ?? env.PORT}`)
  }
  const app = { limits: {} }
  if (values['limit-compressed']) app.limits.compressed = parseByteSize(values['limit-compressed'])
  if (values['limit-inflated']) app.limits.inflated = parseByteSize(values['limit-inflated'])
  if (values['parse-threads']) app.parseThreads = Number(values['parse-threads'])
  const ingest = {}
  if (values['buffer-budget']) ingest.bufferBudget = parseByteSize(values['buffer-budget'])
  if (values['parse-cost']) ingest.parseCost = parseByteSize(values['parse-cost'])
  if (values['queue-timeout']) ingest.queueMs = parseDuration(values['queue-timeout'], '--queue-timeout')
  if (values['share-parse'] !== undefined) ingest.shareParse = values['share-parse']
  if (Object.keys(ingest).length > 0) app.ingest = ingest
  if (values['limit-record']) app.limits.record = parseByteSize(values['limit-record'])
  if (values['no-request-peak']) app.resetPeakPerRequest = false
  if (values['unsafe-bad']) app.unsafeBad = true
  if (values['disk-quota']) app.diskQuota = parseByteSize(values['disk-quota'])
  if (values['upload-max-age']) app.upload = { maxAgeMs: parseDuration(values['upload-max-age'], '--upload-max-age') }
  if (values['body-idle-timeout'] !== undefined) app.limits.bodyIdleMs = parseDuration(values['body-idle-timeout'], '--body-idle-timeout')
  if (values['min-body-rate'] !== undefined) app.limits.minBodyRate = parseByteSize(values['min-body-rate'])
  // the worker hands `app.server` to createLabServer (lib/supervisor/worker-main.js)
  if (values['max-connections'] !== undefined) app.server = { maxConnections: parseLimitCount(values['max-connections'], '--max-connections', 1_000_000) }
  if (values['max-metrics-streams'] !== undefined) app.metrics = { maxClients: parseLimitCount(values['max-metrics-streams'], '--max-metrics-streams', 100_000) }
  const databaseUrl = values['database-url'] ?? env.DATABASE_URL
  if (databaseUrl) app.database = { url: databaseUrl }
  const host = values.host ?? env.HOST ?? '127.0.0.1'
  const allowed = values['allowed-hosts'] ?? env.STREAMLAB_ALLOWED_HOSTS
  app.guard = {
    allowedHosts: allowed ? allowed.split(',').map(function trim (h) { return h.trim() }).filter(Boolean) : [],
    boundHost: host,
    // beyond loopback, other machines need a token for changes; one is made if none is given
    accessToken: values['access-token'] ?? env.STREAMLAB_TOKEN ?? (isLoopback(host) ? null : randomBytes(24).toString('base64url'))
  }
  // checked here, so that a bad flag is a usage error and not a worker that dies at birth
  const checked = normalizeOptions(app)
  if (app.database) checkDatabaseUrl(app.database, checked, values['database-url'] === undefined ? 'DATABASE_URL' : '--database-url')

  if (values['no-memory-limit'] && values['memory-limit'] !== undefined) {
    throw new TypeError('give --memory-limit or --no-memory-limit, not both')
  }
  const memoryLimit = values['no-memory-limit'] ? 0 : values['memory-limit'] === undefined ? DEFAULT_BUDGET : parseByteSize(values['memory-limit'])
  if (app.unsafeBad && memoryLimit === 0) {
    throw new TypeError('--unsafe-bad needs a memory budget: without one a zip bomb takes the whole host down, ' +
      'not just the worker (drop --memory-limit=0, or give e.g. --memory-limit 512MiB)')
  }
  if (values['max-restarts'] !== undefined) {
    throw new TypeError('--max-restarts is gone: the supervisor no longer gives up after crashes, it restarts ' +
      'with a growing delay instead; pace it with --restart-backoff and --max-restart-backoff')
  }
  function duration (flag) {
    return values[flag] === undefined ? undefined : parseDuration(values[flag], `--${flag}`)
  }
  return normalizeSupervisorOptions({
    host,
    port,
    app,
    memoryLimit,
    restartBackoffMs: duration('restart-backoff'),
    maxRestartBackoffMs: duration('max-restart-backoff'),
    restartWindowMs: duration('restart-window')
  })
}

async function main () {
  let config
  try {
    config = readConfig(process.argv.slice(2), process.env)
  } catch (err) {
    console.error(`streamlab: ${err.message}\n${USAGE}`)
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
