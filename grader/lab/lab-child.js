#!/usr/bin/env node
/** The reference lab's process: the lab's app and dashboard, no student code; its IPC messages are in lab/README.md. */
import path from 'node:path'
import { parseArgs } from 'node:util'
import express from 'express'
import { createApp } from '../../app.js'
import { createLabServer } from '../../lib/http/server.js'
import { procAvailable } from '../../lib/util/platform.js'
import { createRunRecord } from './run-record.js'

function tell (message) {
  if (process.connected) process.send(message, function sent () {})
}

async function main () {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      'data-dir': { type: 'string' }
    }
  })
  if (typeof process.send !== 'function') {
    process.stderr.write('grader/lab/lab-child.js is forked by the grader (npm run grade -- handler.js)\n')
    process.exitCode = 2
    return
  }

  // the bus exists only once the app does: the run record reaches it through this holder
  const bus = { events: null }
  const extra = express.Router()
  const lateEvents = {
    emit: function emitOnLabBus (...args) { return bus.events?.emit(...args) }
  }
  const record = createRunRecord(lateEvents, function askToCancel (id) { tell({ type: 'cancel', id }) })
  extra.use(record.router)

  const app = createApp({
    ...(values['data-dir'] ? { dataDir: path.resolve(values['data-dir']) } : {}),
    // the grader measures from outside (/proc) and holds the peak itself: no request resets it
    resetPeakPerRequest: false,
    // the grader's own watch kills this process past its budget; /bad beside the handler is measured, not refused
    memoryBudget: 0,
    extraRoutes: extra
  })
  bus.events = app.locals.events
  const server = createLabServer(app)

  if (!procAvailable()) {
    // without /proc the grader cannot read this RSS: say it, as the lab's worker tells its supervisor
    setInterval(function reportRss () { tell({ type: 'rss', rss: process.memoryUsage.rss() }) }, 100).unref()
  }
  process.on('message', function onMessage (message) {
    switch (message?.type) {
      case 'gc':
        collectGarbage()
        tell({ type: 'reply', seq: message.seq, rss: process.memoryUsage.rss() })
        break
      case 'ping':
        tell({ type: 'reply', seq: message.seq })
        break
      case 'run':
        record.apply(message.step)
        break
    }
  })
  process.once('disconnect', function graderGone () {
    server.close()
    server.closeAllConnections()
    Promise.allSettled([app.close()]).finally(function exit () { process.exit(0) })
  })

  const port = Number(values.port)
  server.once('error', function listenFailed (err) {
    process.stderr.write(`lab-child: ${err.message}\n`)
    process.exit(1)
  })
  server.listen(port, values.host, function ready () {
    const url = `http://${values.host}:${server.address().port}`
    console.log(`streamlab reference lab listening on ${url} (pid ${process.pid})`)
    tell({ type: 'ready', url })
  })
}

/** Two full collections: the first may leave what finalizers freed for the second. */
function collectGarbage () {
  if (typeof globalThis.gc !== 'function') return
  globalThis.gc()
  globalThis.gc()
}

main().catch(function crash (err) {
  process.stderr.write(`lab-child: ${err.stack ?? err}\n`)
  process.exit(1)
})
