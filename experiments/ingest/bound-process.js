/**
 * The machine's bound (lib/measure/bound.js) measured for the ingest experiment in a process of
 * its own: the body it holds and the cores it keeps busy are never the server's, and the server's
 * event loop is never blocked by it. Forked by experiments/ingest/index.js; it speaks the protocol
 * of lib/experiments/child-job.js:
 *
 *   in:  { file, format } a gzip input of the ingest bench (lib/measure/inputs.js)
 *   out: { type: 'progress', done, total } per stage pass,
 *        then { type: 'result', mbPerSecond, cores, cpuPerGB, body } or { type: 'error', message }
 *        (cpuPerGB: the stages' own CPU seconds per GB)
 */
import { serveChildJob } from '../../lib/experiments/child-job.js'
import { measureBoundOfFile } from '../../lib/measure/bound.js'

serveChildJob('experiments/ingest/bound-process.js', async function measure ({ file, format }, progress) {
  // one pass a stage, as the ingest bench's quick bound: npm run bench -- bound measures with care
  const data = await measureBoundOfFile(file, { format, repeat: 1 }, function relay (event) {
    if (event.type === 'progress') progress(event.done, event.total)
  })
  return { mbPerSecond: data.bound, cores: data.cores, cpuPerGB: data.stagesCpuPerGB, body: data.body }
})
