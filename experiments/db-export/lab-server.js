#!/usr/bin/env node
/**
 * A lab server for the db-export bench: the app with the options given as JSON in argv[2] (server.js takes its
 * database from the environment), on a free port: `node experiments/db-export/lab-server.js '{"database":{"url":null}}'`
 */
import { createApp } from '../../app.js'

let options
try {
  options = JSON.parse(process.argv[2] ?? '{}')
} catch (err) {
  console.error(`db-lab-server: argv[2] must be JSON app options: ${err.message}`)
  process.exit(2)
}
const app = createApp(options)
const server = app.listen(0, '127.0.0.1', function announce (err) {
  if (err) {
    console.error(`db-lab-server: ${err.message}`)
    process.exit(1)
  }
  console.log(`streamlab listening on http://127.0.0.1:${server.address().port}`)
})

function shutdown () {
  server.close()
  server.closeAllConnections()
  Promise.allSettled([app.close()]).finally(function exit () { process.exit(0) })
}
process.once('SIGTERM', shutdown)
process.once('SIGINT', shutdown)
