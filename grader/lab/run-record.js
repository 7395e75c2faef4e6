/** A grading run as the dashboard sees an experiment: `grade` events on the bus, GET/DELETE /experiments/:id for it. */
import express from 'express'

const RUN_NAME = 'grade'

/** How long DELETE waits for the grader to stop after the check under way. */
const CANCEL_WAIT_MS = 30_000

/** `events`: the lab's bus; `askToCancel(id)` tells the grader the page asked to cancel a run. */
export function createRunRecord (events, askToCancel) {
  /** id -> the run's state, as GET /experiments/:id answers it */
  const runs = new Map()
  /** id -> functions waiting for the run to end (DELETE) */
  const waiting = new Map()

  /** One step from the grader: { id, phase, params?, startedAt?, progress?, result?, error? }. */
  function apply (step) {
    if (typeof step?.id !== 'string') return
    let run = runs.get(step.id)
    if (step.phase === 'start') {
      run = {
        id: step.id,
        name: RUN_NAME,
        status: 'running',
        params: step.params ?? {},
        startedAt: step.startedAt ?? Date.now(),
        endedAt: null,
        progress: step.progress ?? { done: 0, total: 0 },
        result: null,
        error: null,
        pids: [process.pid]
      }
      runs.set(step.id, run)
      emit(run, 'start', { params: run.params })
      // a lab started again mid-run (the handler took the last one down) hears where the run is
      if (step.progress) emit(run, 'progress', { ...step.progress })
      return
    }
    if (run === undefined) return
    if (step.phase === 'progress') {
      run.progress = { ...step.progress }
      emit(run, 'progress', { ...step.progress })
      return
    }
    run.endedAt = Date.now()
    if (step.phase === 'result') {
      run.status = 'done'
      run.result = step.result ?? null
      emit(run, 'result', { result: run.result })
    } else if (step.phase === 'cancelled') {
      run.status = 'cancelled'
      emit(run, 'cancelled', {})
    } else {
      run.status = 'failed'
      run.error = step.error ?? { status: 500, type: 'internal', message: 'the grading run failed' }
      emit(run, 'error', { error: run.error })
    }
    for (const done of waiting.get(run.id) ?? []) done()
    waiting.delete(run.id)
  }

  function emit (run, phase, extra) {
    events.emit('experiment', { id: run.id, name: RUN_NAME, phase, time: Date.now(), ...extra })
  }

  const router = express.Router()
  router.get('/experiments/:id', function getGradeRun (req, res, next) {
    const run = runs.get(req.params.id)
    if (run === undefined) return next()
    res.set('Cache-Control', 'no-store').json(run)
  })
  router.delete('/experiments/:id', async function cancelGradeRun (req, res, next) {
    const run = runs.get(req.params.id)
    if (run === undefined) return next()
    if (run.status === 'running') {
      const ended = new Promise(function waitForEnd (resolve) {
        if (!waiting.has(run.id)) waiting.set(run.id, [])
        waiting.get(run.id).push(resolve)
        setTimeout(resolve, CANCEL_WAIT_MS).unref()
      })
      askToCancel(run.id)
      await ended
    }
    res.json(run)
  })
  return { router, apply }
}
