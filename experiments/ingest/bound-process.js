/**
 * The machine's bound (lib/measure/bound.js) for the ingest experiment, in a process of its own so that the body it
 * holds and the cores it keeps busy are never the server's. A child job (lib/experiments/child-job.js):
 * in { file, format }; out progress per stage pass, then { mbPerSecond, cores, cpuPerGB, body } (cpuPerGB: the stages' own).
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
