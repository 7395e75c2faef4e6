// Errors of the lab's services: uploads, experiment runs and their records, the database.
import { createError } from './lab-error.js'

/** 404 upload.not.found: DELETE /uploads/:file of a name the lab does not have (any more). */
export function uploadNotFound (file) {
  return createError(404, 'upload.not.found', `no upload named ${file}`, { file })
}

/** 400 experiment.unknown: POST /experiments names no experiment in the registry. */
export function experimentUnknown (name, known) {
  return createError(400, 'experiment.unknown', `no experiment named "${String(name).slice(0, 100)}": try ${known.join(', ')}`,
    { name: String(name).slice(0, 100), known })
}

/** 404 experiment.not.found: no run with this id; the engine keeps the last `keep`. */
export function experimentNotFound (id, keep) {
  return createError(404, 'experiment.not.found', `no experiment run with id "${id}" (the last ${keep} are kept)`,
    { id: String(id).slice(0, 100) })
}

/** 409 experiment.busy: one experiment at a time, so that runs do not measure each other. */
export function experimentBusy (running) {
  return createError(409, 'experiment.busy', `experiment ${running.id} (${running.name}) is still running: wait for it or cancel it`,
    { running: running.id, name: running.name })
}

/** 409 experiment.not.running: DELETE of a run that has already ended. */
export function experimentNotRunning (id, runStatus) {
  return createError(409, 'experiment.not.running', `experiment ${id} has already ended (${runStatus})`, { id, runStatus })
}

/** 404 run.not.found: no run record with this id in the data directory's runs/ (the lab keeps the last `keep`). */
export function runNotFound (id, keep) {
  return createError(404, 'run.not.found', `no run record with id "${String(id).slice(0, 100)}" (the last ${keep} runs are kept)`,
    { id: String(id).slice(0, 100), keep })
}

/** 409 run.id.ambiguous: an id prefix (the short id a page shows) that begins several run records' ids. */
export function runIdAmbiguous (prefix, ids) {
  return createError(409, 'run.id.ambiguous', `"${String(prefix).slice(0, 100)}" begins ${ids.length} run ids: give more of the id`,
    { id: String(prefix).slice(0, 100), matches: ids.slice(0, 10) })
}

/**
 * 422 run.invalid: a file in the runs folder (or given to the CLI) is no run record this lab reads. `field` is the
 * member at fault as a path (`timeline.samples[3].rss`), or `(file)`, `(json)`.
 */
export function runInvalid (where, field, problem) {
  return createError(422, 'run.invalid', `${where} is not a run record this lab reads: ${field} ${problem}`,
    { run: String(where).slice(0, 300), field, problem })
}

/** 500 worker.crashed: the error of a run in flight when the worker died, recorded by the next worker. */
export function workerCrashed (crash) {
  return createError(500, 'worker.crashed',
    crash.reason === 'memory-limit'
      ? 'the worker process passed its memory budget and was killed during this run; the lab restarted it'
      : 'the worker process died during this run; the lab restarted it',
    { reason: crash.reason, rss: crash.rss ?? null, budget: crash.budget ?? null, route: crash.route ?? null })
}

/** What the message of a 503 database.unavailable says happened, by when it happened. */
const DATABASE_LOST = Object.freeze({
  connect: 'the database is unavailable',
  closed: 'the database handle is closed (the lab is shutting down)',
  export: 'the database connection ended during the export',
  query: 'the database went away during the query'
})

/** `cause` when the situation, not the driver, names it. */
const DATABASE_LOST_CAUSE = Object.freeze({ closed: 'closed', export: 'connection ended' })

/**
 * 503 database.unavailable: not reached or started (`connect`), shutting down (`closed`), or its connection ended
 * during an export or query. `cause`: the driver's code; `detail`: words fit for a client; `target`: redacted.
 */
export function databaseUnavailable ({ database, when, cause, detail, target }) {
  if (!Object.hasOwn(DATABASE_LOST, when)) throw new TypeError(`databaseUnavailable: unknown when "${when}"`)
  const message = DATABASE_LOST[when] + (target == null ? '' : ` (${target})`) + (detail == null ? '' : `: ${detail}`)
  return createError(503, 'database.unavailable', message,
    { database, cause: DATABASE_LOST_CAUSE[when] ?? cause ?? null })
}

/** 503 database.busy: no pooled connection came free within `waitedMs`. */
export function databaseBusy (database, poolMax, waitedMs) {
  return createError(503, 'database.busy',
    `all ${poolMax} database connection${poolMax === 1 ? ' is' : 's are'} in use and none came free within ${waitedMs} ms` +
    (database === 'embedded' ? ' (the embedded database serves one request at a time)' : ''),
    { database, poolMax, waitedMs })
}

/** 503 database.not.seeded: the export's tables are absent and the lab may not seed them. */
export function databaseNotSeeded (database) {
  return createError(503, 'database.not.seeded',
    'the desks and items tables are not there: run npm run db:seed (the lab seeds them itself unless database.seed is false)',
    { database })
}
