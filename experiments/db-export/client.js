/**
 * The db-export client, a child job (lib/experiments/child-job.js) in its own process, so the rows it parses are never
 * the server's memory; it runs the dashboard's browser code. In { baseUrl, mode, rows, batch?, highWaterMark?, sleep? }, out { timing }.
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
