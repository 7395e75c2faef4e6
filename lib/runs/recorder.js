/**
 * The recorder the experiment engine is handed: it listens for as long as a run lasts (the app's sampler at its interval, the
 * bus's `request`, `peak` and `sites` events, the last window of sites once `sites.settled()`) and, when the run ends, writes its
 * record to the runs folder. The engine knows nothing of files: it calls `begin` when a run starts, `progress` on the handle as
 * the run reports it, and `end` when the run ends. More: README.md, "recorder.js".
 */
import { createRunStore } from './store.js'
import { createTimeline } from './timeline.js'
import { makeRecord, recordText } from './record.js'

/**
 * `keep`: the records kept (0: none written); `sites`: the site sampling (lib/metrics/alloc-sites.js); `options`: the app's
 * normalised options, which a record notes; `timeline`: bounds for createTimeline (specs).
 */
export function createRunRecorder (settings) {
  const { sampler, events, sites = null, options = null, warn = console.warn } = settings
  if (typeof sampler?.subscribe !== 'function') throw new TypeError('the recorder needs the app\'s sampler')
  if (typeof events?.on !== 'function') throw new TypeError('the recorder needs the lab\'s event bus')
  const store = createRunStore({ dir: settings.dir, keep: settings.keep, diskQuota: settings.diskQuota ?? null })
  const interval = sampler.interval
  /** writes under way: close() waits for them */
  const writing = new Set()
  /** handles of runs being recorded: close() ends their listening */
  const recording = new Set()

  /** Start recording a run: a handle with `progress(update)` and `end({ status, endedAt, result, error })`; null when none are kept. */
  function begin (run) {
    if (store.keep === 0) return null
    const timeline = createTimeline({ interval, ...settings.timeline })
    let lastStage = null
    // an experiment's warm-up upload is no part of the run: a replay draws what the live page drew
    function onRequest (event) { if (event?.warmUp !== true) timeline.addRequest(event) }
    function onPeak (event) {
      if (event?.reset !== true) return
      // a reset the lab makes for its own measurement is kept apart: a chart does not draw it as the user's
      if (event.by === 'lab') timeline.addMark(event.time ?? Date.now(), 'lab-peak-reset', 'peak reset by the lab')
      else timeline.addMark(event.time ?? Date.now(), 'peak-reset', 'peak reset')
    }
    const unsubscribe = sampler.subscribe(interval, timeline.addSample)
    events.on('request', onRequest)
    events.on('peak', onPeak)
    events.on('sites', timeline.addSiteWindow)
    let ended = false

    function stopListening () {
      unsubscribe()
      events.off('request', onRequest)
      events.off('peak', onPeak)
      recording.delete(handle)
    }

    async function write (final) {
      const text = recordText(function build (bounds) {
        return makeRecord({
          id: run.id,
          experiment: run.name,
          title: run.title ?? null,
          params: run.params ?? null,
          status: final.status,
          source: 'engine',
          startedAt: run.startedAt,
          endedAt: final.endedAt,
          results: final.result ?? null,
          error: final.error ?? null,
          options
        }, timeline.toRecord(bounds))
      })
      const written = await store.save(run.id, text)
      events.emit('run-record', { id: run.id, name: run.name, time: Date.now(), file: `${run.id}.json`, bytes: written.bytes })
    }

    const handle = {
      stopListening,
      /** The run reported progress: a new stage (or route) is a mark. */
      progress: function progress (update) {
        if (ended) return
        const stage = [update?.stage, typeof update?.route === 'string' ? `/${update.route}` : null].filter(Boolean).join(' ')
        if (stage !== '' && stage !== lastStage) timeline.addMark(Date.now(), 'stage', stage)
        lastStage = stage
      },
      /** The run has ended: stop listening and write its record. Resolves when written or given up. */
      end: function end (final) {
        if (ended) return Promise.resolve()
        ended = true
        stopListening()
        // the run's last window of allocation sites, closed as it ended, is on the bus once settled
        const done = Promise.resolve(sites?.settled()).then(function lastSitesIn () {
          events.off('sites', timeline.addSiteWindow)
          return write(final)
        }).catch(function reportUnwritten (err) {
          warn(`streamlab: the record of run ${run.id} was not written: ${err.message}`)
          events.emit('run-record',
            { id: run.id, name: run.name, time: Date.now(), error: { type: err.type ?? 'internal', message: err.message } })
        }).finally(function written () { writing.delete(done) })
        writing.add(done)
        return done
      }
    }
    recording.add(handle)
    return handle
  }

  return Object.freeze({
    begin,
    store,
    settled: function settled () {
      return Promise.all([...writing]).then(function none () {})
    },
    /** Stop listening for runs still going (their engine ends them) and wait for the writes. */
    close: async function close () {
      for (const handle of [...recording]) handle.stopListening()
      await Promise.all([...writing])
    }
  })
}
