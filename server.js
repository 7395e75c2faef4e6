#!/usr/bin/env node
/**
 * Entry point: the one place that reads the environment and flags, and the
 * only place that listens on a real port.
 */
import { parseArgs } from 'node:util'
import { createApp } from './lib/app.js'
import { closeParsePool } from './lib/parse-pool.js'
import { parseByteSize } from './lib/units.js'

const USAGE = `Usage: node server.js [options]
  --port N               port to listen on (env PORT, default 3000)
  --host ADDRESS         address to bind (env HOST, default 127.0.0.1)
  --limit-compressed SZ  largest compressed body, both routes (default 512MiB)
  --limit-inflated SZ    largest inflated body, both routes (default 500MiB)
  --parse-threads N      worker threads that parse /good's batches (default: cores, at most 4)
  --buffer-budget SZ     inflate and parse buffers /good may hold across all requests (default 32MiB)
  --no-request-peak      never reset the kernel's peak RSS per request (for external measurement)`

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
      'no-request-peak': { type: 'boolean' },
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
  if (values['buffer-budget']) app.ingest = { bufferBudget: parseByteSize(values['buffer-budget']) }
  if (values['no-request-peak']) app.resetPeakPerRequest = false
  return { port, host: values.host ?? env.HOST ?? '127.0.0.1', app }
}

function main () {
  let config
  try {
    config = readConfig(process.argv.slice(2), process.env)
  } catch (err) {
    console.error(`streamlab: ${err.message}\n${USAGE}`)
    process.exit(2)
  }
  let app
  try {
    app = createApp(config.app)
  } catch (err) {
    console.error(`streamlab: ${err.message}\n${USAGE}`)
    process.exit(2)
  }
  const server = app.listen(config.port, config.host, function announce (err) {
    if (err) {
      console.error(`streamlab: cannot listen on ${config.host}:${config.port}: ${err.message}`)
      process.exit(1)
    }
    const { address, port } = server.address()
    const shown = address.includes(':') ? `[${address}]` : address
    const base = `http://${shown}:${port}`
    console.log(`streamlab listening on ${base}`)
    console.log(`  GET  ${base}/generate?size=10000&save=1   generate test-data/test.json.gz`)
    console.log(`  POST ${base}/bad                           buffered ingest`)
    console.log(`  POST ${base}/good                          streamed ingest`)
    if (address !== '127.0.0.1' && address !== '::1') {
      console.warn(`  warning: bound to ${address}, reachable from other machines; the lab accepts hostile bodies by design`)
    }
  })
  function shutdown (signal) {
    console.log(`streamlab: ${signal}, closing`)
    server.close()
    server.closeAllConnections()
    closeParsePool().finally(function exit () { process.exit(0) })
  }
  process.on('SIGINT', shutdown)
  process.on('SIGTERM', shutdown)
}

main()
