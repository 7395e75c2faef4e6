/**
 * The database export's client in a process of its own, so that the rows it
 * receives and parses are never counted as the server's memory. It runs the
 * very code the dashboard runs in the browser (`dashboard/db-export-browser.js`).
 * Started by `experiments/db-export/measure.js` through `runChildJob`; speaks the protocol
 * of `lib/experiments/child-job.js`:
 *
 *   in:  { baseUrl, mode, rows, batch?, highWaterMark?, sleep? }
 *   out: { type: 'result', timing } or { type: 'error', message }
 */
import { timeInBrowser } from '../../dashboard/db-export-browser.js'
import { serveChildJob } from '../../lib/experiments/child-job.js'
import { runKeyHeaders } from '../../lib/limits/run-keys.js'

serveChildJob('experiments/db-export/client.js', async function runJob (job) {
  if (job === null || typeof job !== 'object' || typeof job.baseUrl !== 'string' || !/^https?:\/\//.test(job.baseUrl)) {
    throw new TypeError('job needs an http baseUrl')
  }
  const { baseUrl, mode, rows, batch, highWaterMark, sleep } = job
  return { timing: await timeInBrowser({ baseUrl, mode, rows, batch, highWaterMark, sleep, headers: runKeyHeaders() }) }
})
