// The lab's worker process, forked by the supervisor: it reads no flags and no environment, its options come
// over IPC with the listening socket. It exits when the IPC channel closes. Its messages: lib/supervisor/README.md.
import { createApp } from './app.js'
import { createLabServer } from './lib/http/server.js'

let server = null
let app = null
let rssTimer = null
let shuttingDown = false

/** To the supervisor; a message it can no longer receive is dropped, not thrown. */
function tell (message) {
  if (process.connected) process.send(message, function sent () {})
}

function onMessage (message, handle) {
  switch (message?.type) {
    case 'listen':
      listen(message, handle)
      break
    case 'connection':
      take(message.id, handle)
      break
    case 'crash':
      // the hub forwards it as `event: crash`; ids restarted, so reconnecting clients replay it
      app?.locals.events.emit('crash', message.crash)
      break
  }
}

function listen ({ options, reportRssMs, results }, listeningSocket) {
  if (server !== null) return
  app = createApp(options)
  const events = app.locals.events
  // before the first request: a snapshot or a page opened now shows what the last workers found
  if (Array.isArray(results) && results.length > 0) events.emit('restore', { results })
  events.on('request', function reportRequest (event) {
    if (event.phase === 'start' || event.phase === 'end') {
      tell({ type: 'request', phase: event.phase, id: event.id, route: event.route })
    }
  })
  events.on('experiment', function reportExperiment (event) {
    if (event.phase === 'progress') return
    const { phase, id, name, time } = event
    const report = { type: 'experiment', phase, id, name, params: event.params ?? null, time }
    // the supervisor keeps each experiment's latest result for the workers after this one
    if (event.phase === 'result') report.result = event.result ?? null
    tell(report)
  })
  // the server's own options (maxConnections ...) travel with the app's, under `server`
  server = createLabServer(app, options.server)
  // the supervisor's socket, shared: this process accepts on it directly
  server.listen(listeningSocket, function ready () {
    tell({ type: 'ready', pid: process.pid })
  })
  if (reportRssMs > 0) {
    rssTimer = setInterval(function reportRss () {
      tell({ type: 'rss', rss: process.memoryUsage.rss() })
    }, reportRssMs)
    rssTimer.unref()
  }
}

/** A connection the supervisor accepted: say so first, so it can close its copy. */
function take (id, socket) {
  if (!socket) return
  tell({ type: 'connection-taken', id })
  if (server === null || shuttingDown) {
    socket.destroy()
    return
  }
  server.emit('connection', socket)
}

function shutdown (reason) {
  if (shuttingDown) return
  shuttingDown = true
  tell({ type: 'stopping', reason })
  clearInterval(rssTimer)
  if (server !== null) {
    server.close()
    server.closeAllConnections()
  }
  // the app's close() stops what it started: parse threads, database, sampler, a run in flight
  Promise.allSettled([app?.close()]).finally(function exit () { process.exit(0) })
}

if (typeof process.send !== 'function') {
  process.stderr.write('worker.js is started by server.js (the supervisor), not by hand\n')
  process.exitCode = 2
} else {
  process.on('message', onMessage)
  process.on('SIGINT', shutdown)
  process.on('SIGTERM', shutdown)
  process.once('disconnect', function supervisorGone () {
    process.exit(shuttingDown ? 0 : 1)
  })
}
