/**
 * /experiments: start, watch and cancel the lab's experiments. The
 * mechanics live in lib/experiments/; here a request meets the engine.
 *
 *   GET    /experiments      { experiments: [{ name, title, description, params }], running, recent }
 *   POST   /experiments      { name, params } -> 202 the run, Location: /experiments/:id
 *   GET    /experiments/:id  the run: status, progress, result or error
 *   PATCH  /experiments/:id  { params } of the live kind, changed while it runs -> 200 the run
 *   DELETE /experiments/:id  cancels a running run -> 200 the cancelled run; 409 if it had ended
 */
import express from 'express'
import { badParameter } from '../lib/errors/index.js'
import { createEngine } from '../lib/experiments/engine.js'
import { createRunRecorder } from '../lib/runs/recorder.js'
import { runsDir } from '../lib/runs/store.js'
import { EXPERIMENTS } from '../experiments/index.js'

/**
 * The /experiments routes. `registry`: experiment modules by name (tests bring their own); `runKeys`: the app's
 * keyring; `sampler` and `diskQuota`: with them each run's record is kept in <dataDir>/runs/, its site windows
 * from `allocationSites`.
 */
export function experimentRoutes (opts, events, { registry = EXPERIMENTS, runKeys, sampler, diskQuota, allocationSites = null } = {}) {
  const recorder = sampler === undefined
    ? null
    : createRunRecorder({ dir: runsDir(opts.dataDir), keep: opts.runs.keep, sampler, events, sites: allocationSites, diskQuota,
      options: opts })
  const engine = createEngine({ options: opts, events, registry, runKeys, recorder })
  // a run in flight when the previous worker died is lost with it: say so under its id
  function recordLostRun (crash) {
    if (crash?.experiment) engine.recordLostRun(crash.experiment, crash)
  }
  events.on('crash', recordLostRun)
  const router = express.Router({ caseSensitive: true, strict: true })
  // a start request is a name and a few parameters: nothing bigger is read, and nothing slower
  // (the app's body deadline, lib/limits/body-deadline.js, answers 408 to a body that stalls or drips)
  const readJson = express.json({ limit: '16kb' })

  router.get('/experiments', function listExperiments (req, res) {
    res.set('Cache-Control', 'no-store').json({
      experiments: engine.list(),
      running: engine.runningId(),
      recent: engine.recent()
    })
  })

  router.post('/experiments', readJson, function startExperiment (req, res) {
    const body = req.body
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw badParameter('name', body, 'a JSON body { "name": ..., "params": { ... } } sent as application/json')
    }
    if (typeof body.name !== 'string') throw badParameter('name', body.name, 'the name of an experiment (GET /experiments lists them)')
    const run = engine.start(body.name, body.params, { baseUrl: ownBaseUrl(req) })
    res.status(202).location(`/experiments/${run.id}`).json(run)
  })

  router.get('/experiments/:id', function getExperiment (req, res) {
    res.set('Cache-Control', 'no-store').json(engine.get(req.params.id))
  })

  router.patch('/experiments/:id', readJson, function changeExperiment (req, res) {
    const body = req.body
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw badParameter('params', body, 'a JSON body { "params": { ... } } sent as application/json')
    }
    res.json(engine.change(req.params.id, body.params))
  })

  router.delete('/experiments/:id', async function cancelExperiment (req, res) {
    res.json(await engine.cancel(req.params.id))
  })

  /** For the app's `close()`: cancel the run in flight and wait for its processes; leave the bus. */
  router.close = async function closeExperiments () {
    events.removeListener('crash', recordLostRun)
    const id = engine.runningId()
    if (id !== null && id !== undefined) {
      try {
        await engine.cancel(id)
      } catch {
        // it ended between the look and the cancel: nothing left to stop
      }
    }
    // the record of the run just ended (or cancelled above) is written before the app lets go
    await recorder?.close()
  }
  router.recorder = recorder

  return router
}

/** The load goes to the address this request arrived on, never the Host header a client chose. */
function ownBaseUrl (req) {
  let address = req.socket.localAddress
  // a dual-stack server sees IPv4 clients as ::ffff:a.b.c.d
  if (address.startsWith('::ffff:') && address.includes('.')) address = address.slice(7)
  const host = address.includes(':') ? `[${address}]` : address
  return `http://${host}:${req.socket.localPort}`
}
