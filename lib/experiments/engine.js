// The experiment engine: one run at a time, the last few kept, the server's memory measured around each.
// Experiments are registry modules (schema, normalizeParams, run(ctx)); bus events and run keys: README.md.
import { randomUUID } from 'node:crypto'
import {
  experimentBusy, experimentNotFound, experimentNotRunning, experimentUnknown, internalError, workerCrashed
} from '../errors/index.js'
import { holdPeak, readPeakRss } from '../metrics/peak.js'
import { integerOptions } from '../config/integers.js'
import { withRunKey } from '../limits/run-keys.js'
import { changeLiveParams } from './params.js'
import { settleMemory, followHeld, memoryFigures, resetAndReadIdle } from './window.js'

const ENGINE_DEFAULTS = Object.freeze({
  /** Finished runs kept for GET /experiments/:id. */
  keep: 20,
  /** Progress events are emitted at most this often (a dashboard needs no more than ~5/s). */
  progressIntervalMs: 200,
  /** How long cancel() waits for a module to honour its abort signal before giving up on it. */
  cancelGraceMs: 5000
})

const checkInteger = integerOptions('engine option ')

function checkRegistry (registry) {
  if (registry === null || typeof registry !== 'object') throw new TypeError('registry must be an object of experiment modules')
  for (const [key, mod] of Object.entries(registry)) {
    if (mod === null || typeof mod !== 'object' || mod.name !== key || typeof mod.run !== 'function' ||
        typeof mod.normalizeParams !== 'function' || !Array.isArray(mod.params)) {
      throw new TypeError(`registry entry "${key}" must be a module with name "${key}", params, normalizeParams and run`)
    }
  }
  return registry
}

/**
 * An engine. `options`: the normalised app options, handed to every module; `runKeys`: the app's keyring
 * (without one, runs get no key); `recorder` keeps each run's record (without one, a run lives in `keep`).
 */
export function createEngine (settings) {
  if (settings === null || typeof settings !== 'object') throw new TypeError('createEngine needs { options, events, registry }')
  const { options, events } = settings
  const registry = checkRegistry(settings.registry)
  if (events === null || typeof events?.emit !== 'function') throw new TypeError('events must be an EventEmitter')
  const runKeys = settings.runKeys ?? null
  if (runKeys !== null && (typeof runKeys.issue !== 'function' || typeof runKeys.revoke !== 'function')) {
    throw new TypeError('runKeys must be a keyring from lib/limits/run-keys.js')
  }
  const recorder = settings.recorder ?? null
  if (recorder !== null && typeof recorder.begin !== 'function') throw new TypeError('recorder must be a lib/runs/recorder.js recorder')
  const config = Object.freeze({
    keep: checkInteger('keep', settings.keep ?? ENGINE_DEFAULTS.keep, 1, 1000),
    progressIntervalMs: checkInteger('progressIntervalMs', settings.progressIntervalMs ?? ENGINE_DEFAULTS.progressIntervalMs, 0, 60_000),
    cancelGraceMs: checkInteger('cancelGraceMs', settings.cancelGraceMs ?? ENGINE_DEFAULTS.cancelGraceMs, 0, 600_000)
  })

  /** id -> run, oldest first */
  const runs = new Map()
  let running = null

  function emit (run, phase, extra) {
    events.emit('experiment', { id: run.id, name: run.name, phase, time: Date.now(), ...extra })
  }

  /**
   * A measurement window from its own baseline (window.js); returns its close. The run's own window stays
   * open throughout, so the peak is folded into the run's maximum before every reset.
   */
  function openWindow (run) {
    foldPeak(run)
    const start = { ...resetAndReadIdle(events), collected: run.rested }
    run.rested = false
    const stopFollowing = followHeld(events)
    let figures = null
    return function closeWindow () {
      figures ??= memoryFigures(start, foldPeak(run), stopFollowing())
      return figures
    }
  }

  function foldPeak (run) {
    const peak = readPeakRss()
    if (peak.bytes > run.maxPeak) run.maxPeak = peak.bytes
    return peak
  }

  function find (id) {
    const run = runs.get(id)
    if (!run) throw experimentNotFound(id, config.keep)
    return run
  }

  function finish (run, status, fields = {}) {
    if (run.status !== 'running') return
    const last = foldPeak(run)
    const memory = memoryFigures(run.start, { bytes: run.maxPeak, source: last.source })
    run.status = status
    run.endedAt = Date.now()
    if (status === 'done') {
      const result = fields.result !== null && typeof fields.result === 'object' ? fields.result : { value: fields.result ?? null }
      // the whole run, as the server process felt it: what the module measured per part is in its own result
      run.result = Object.freeze({ ...result, server: memory })
    }
    if (fields.error) run.error = fields.error
    for (const child of run.children) {
      // a module that forgot its child: the engine started the run, so it tidies up
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
    run.children = []
    run.paramListeners.clear()
    // from now on nothing of this run gets in: a module deaf to its signal included
    runKeys?.revoke(run.key)
    run.key = null
    run.releasePeak()
    if (running === run) running = null
    if (status === 'done') emit(run, 'result', { result: run.result })
    else if (status === 'failed') emit(run, 'error', { error: run.error })
    else emit(run, 'cancelled')
    run.recording?.end({ status, endedAt: run.endedAt, result: run.result, error: run.error })
    run.recording = null
    prune()
  }

  function prune () {
    for (const [id, run] of runs) {
      if (runs.size <= config.keep) break
      if (run !== running) runs.delete(id)
    }
  }

  function makeContext (run) {
    return Object.freeze({
      /** The run's params: new ones after a change of its live params. */
      get params () {
        return run.params
      },
      /** Be told when a client changes the run's live params; returns the call that stops it. */
      onParams: function onParams (listener) {
        run.paramListeners.add(listener)
        return function stopTelling () { run.paramListeners.delete(listener) }
      },
      signal: run.controller.signal,
      baseUrl: run.baseUrl,
      options,
      /** Report progress (`extra` members ride along); throttled, the latest always in get(id). */
      progress: function reportProgress (update) {
        if (run.status !== 'running') return
        const { done, total } = update ?? {}
        if (!Number.isSafeInteger(done) || !Number.isSafeInteger(total) || done < 0 || total < 0) {
          throw new TypeError(`progress needs integer done and total, got ${done}/${total}`)
        }
        run.progress = Object.freeze({ ...update })
        // unthrottled: the record marks where each stage began
        run.recording?.progress(run.progress)
        const now = Date.now()
        if (done === total || now - run.lastProgressAt >= config.progressIntervalMs) {
          run.lastProgressAt = now
          emit(run, 'progress', { ...update })
        }
      },
      /**
       * A window inside the run from its own baseline (peak reset, idle RSS, held peak from now); the returned
       * function reads its figures, the same at every call. Windows must not overlap.
       */
      measure: function measure () {
        return openWindow(run)
      },
      /** Collect the run's garbage and wait for its pages to go back: awaited before measure(). */
      settle: async function settle () {
        run.rested = await settleMemory(run.controller.signal)
      },
      /** A child process the module started: its pid is shown in the run state, and it is killed if left behind. */
      trackProcess: function trackProcess (child) {
        if (child?.pid === undefined) return
        run.pids.push(child.pid)
        run.children.push(child)
      }
    })
  }

  /** Start an experiment (answers at once): 400 experiment.unknown or parameter.invalid, 409 experiment.busy. */
  function start (name, rawParams, { baseUrl } = {}) {
    const mod = Object.hasOwn(registry, name) ? registry[name] : null
    if (mod === null) throw experimentUnknown(name, Object.keys(registry))
    const params = mod.normalizeParams(rawParams, options)
    if (running !== null) throw experimentBusy(running)
    if (typeof baseUrl !== 'string' || baseUrl === '') throw new TypeError('start needs { baseUrl }')
    const run = {
      id: randomUUID(),
      name,
      status: 'running',
      params,
      baseUrl,
      startedAt: Date.now(),
      endedAt: null,
      progress: Object.freeze({ done: 0, total: 0 }),
      result: null,
      error: null,
      pids: [],
      children: [],
      controller: new AbortController(),
      lastProgressAt: 0,
      maxPeak: 0,
      start: null,
      rested: false,
      releasePeak: holdPeak(),
      key: runKeys?.issue() ?? null,
      settled: null,
      recording: null,
      paramListeners: new Set()
    }
    // before the peak reset below, so the record marks it
    run.recording = recorder?.begin({ id: run.id, name, title: mod.title, params, startedAt: run.startedAt }) ?? null
    // (holdPeak above) requests must not reset the peak while the run measures the whole process
    run.start = { ...resetAndReadIdle(events), collected: false }
    runs.set(run.id, run)
    running = run
    prune()
    emit(run, 'start', { params })
    const ctx = makeContext(run)
    run.settled = withRunKey(run.key, async function execute () {
      return mod.run(ctx)
    }).then(function succeeded (result) {
      if (run.controller.signal.aborted) finish(run, 'cancelled')
      else finish(run, 'done', { result })
    }, function failed (err) {
      if (run.controller.signal.aborted) finish(run, 'cancelled')
      else finish(run, 'failed', { error: errorData(err) })
    })
    return snapshot(run)
  }

  /** Abort a running experiment and wait (at most cancelGraceMs) for it and its processes to be gone. */
  async function cancel (id) {
    const run = find(id)
    if (run.status !== 'running') throw experimentNotRunning(run.id, run.status)
    run.controller.abort()
    let timer = null
    const gaveUp = new Promise(function waitForGrace (resolve) {
      timer = setTimeout(resolve, config.cancelGraceMs)
    })
    try {
      await Promise.race([run.settled, gaveUp])
    } finally {
      clearTimeout(timer)
    }
    // a module deaf to its signal is left to finish on its own; the run is over for everyone else
    finish(run, 'cancelled')
    return snapshot(run)
  }

  /** Change a running run's `live` params, e.g. { delayMs: 50 }; the run applies them as it can. */
  function change (id, raw) {
    const run = find(id)
    if (run.status !== 'running') throw experimentNotRunning(run.id, run.status)
    const params = changeLiveParams(registry[run.name], run.params, raw, options)
    const changed = Object.keys(params).filter(function differs (key) { return params[key] !== run.params[key] })
    run.params = params
    for (const listener of run.paramListeners) listener(params, changed)
    return snapshot(run)
  }

  return Object.freeze({
    /** The registry's experiments, as a dashboard builds its controls from them. */
    list: function list () {
      return Object.values(registry).map(function describe (mod) {
        return { name: mod.name, title: mod.title, description: mod.description, params: mod.params }
      })
    },
    start,
    /** A run's state; 404 experiment.not.found. */
    get: function get (id) {
      return snapshot(find(id))
    },
    cancel,
    change,
    /** The running run's id, or null. */
    runningId: function runningId () {
      return running?.id ?? null
    },
    /**
     * A run that died with the worker before this one, recorded as failed with the supervisor's crash record
     * as its error, so GET /experiments/:id says what became of it instead of 404.
     */
    recordLostRun: function recordLostRun (lost, crash) {
      if (typeof lost?.id !== 'string' || runs.has(lost.id)) return
      const error = workerCrashed(crash).toJSON().error
      const run = {
        id: lost.id,
        name: String(lost.name),
        status: 'failed',
        params: lost.params ?? null,
        startedAt: lost.startedAt ?? null,
        endedAt: crash.time ?? Date.now(),
        progress: Object.freeze({ done: 0, total: 0 }),
        result: null,
        error,
        pids: [],
        children: []
      }
      runs.set(run.id, run)
      prune()
      emit(run, 'error', { error })
    },
    /** Kept runs, newest first, without their results (GET /experiments/:id has those). */
    recent: function recent () {
      return [...runs.values()].reverse().map(function brief (run) {
        const state = snapshot(run)
        delete state.result
        return state
      })
    }
  })
}

function errorData (err) {
  if (err !== null && typeof err === 'object' && typeof err.toJSON === 'function' && Number.isInteger(err.status)) {
    return err.toJSON().error
  }
  return internalError(err?.message ?? String(err)).toJSON().error
}

function snapshot (run) {
  return {
    id: run.id,
    name: run.name,
    status: run.status,
    params: run.params,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    progress: run.progress,
    result: run.result,
    error: run.error,
    pids: [...run.pids]
  }
}
