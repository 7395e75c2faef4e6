/**
 * The registry: every experiment the lab can run, by name. One folder per
 * experiment, one line here. The engine (lib/experiments/engine.js, handed
 * this object by routes/experiments.js), the bench CLI (scripts/bench.js),
 * the demo (scripts/demo.js) and the screenshots (scripts/screenshots.js)
 * all read it.
 *
 * A folder holds:
 *   index.js    the experiment the server runs: name, title, description,
 *               params (the one schema), normalizeParams, run(ctx) -> a result
 *               as lib/experiments/result-contract.js describes it
 *   bench.js    `npm run bench -- <name>`: name, summary, usage, options,
 *               normalize, run (command-line side: the server never loads it)
 *   figures.js  optional, command-line side: `screenshot` (the lesson picture)
 *               and `demo` (a step of npm run demo)
 * and whatever else it needs: its mechanics, its run, the processes it forks,
 * its routes (re-exported below for app.js to mount).
 *
 * A bench that runs no experiment on a lab (BENCH_ONLY) is a folder with
 * bench.js only: the bench CLI loads it, the server never does.
 */
import * as ingest from './ingest/index.js'
import * as upload from './upload/index.js'
import * as chunkSize from './chunk-size/index.js'
import * as tinyWrites from './tiny-writes/index.js'
import * as dbExport from './db-export/index.js'
import * as zipBomb from './zip-bomb/index.js'
import * as abortUpload from './abort-upload/index.js'
import * as backpressure from './backpressure/index.js'

/** name -> experiment module */
export const EXPERIMENTS = Object.freeze({
  [ingest.name]: ingest,
  [upload.name]: upload,
  [chunkSize.name]: chunkSize,
  [tinyWrites.name]: tinyWrites,
  [dbExport.name]: dbExport,
  [zipBomb.name]: zipBomb,
  [abortUpload.name]: abortUpload,
  [backpressure.name]: backpressure
})

/** Benches with no experiment of their own: a folder each, with bench.js only. */
export const BENCH_ONLY = Object.freeze(['bound', 'side-by-side'])

/**
 * Routes an experiment folder adds to the lab, mounted by app.js: the app and the routes
 * reach an experiment folder through this registry only (test/layout.test.js).
 */
export { abortUploadRoutes } from './abort-upload/routes.js'
export { backpressureRoutes } from './backpressure/routes.js'
export { chunkSizeRoutes } from './chunk-size/routes.js'
export { uploadRoutes } from './upload/routes.js'
/** The upload experiment's housekeeping: parts a killed worker left, uploads of earlier runs. */
export { normalizeUploadOptions, removeDeadParts, removeOldUploads } from './upload/server.js'

function folderOf (name) {
  if (!Object.hasOwn(EXPERIMENTS, name) && !BENCH_ONLY.includes(name)) throw new TypeError(`no experiment "${name}": the registry has ${[...Object.keys(EXPERIMENTS), ...BENCH_ONLY].join(', ')}`)
  return name
}

/**
 * Every experiment's bench adapter (its folder's bench.js), then the benches with no experiment,
 * by name: the command-line side, loaded only when asked.
 * @returns {Promise<Record<string, object>>}
 */
export async function loadBenches () {
  const entries = await Promise.all([...Object.keys(EXPERIMENTS), ...BENCH_ONLY].map(async function loadBench (name) {
    return [name, await import(`./${folderOf(name)}/bench.js`)]
  }))
  return Object.fromEntries(entries)
}

/**
 * Every experiment's figures (its folder's figures.js: `screenshot`, `demo`), by name, for those that have one.
 * @returns {Promise<Record<string, object>>}
 */
export async function loadFigures () {
  const entries = await Promise.all(Object.keys(EXPERIMENTS).map(async function loadFigure (name) {
    try {
      return [name, await import(`./${folderOf(name)}/figures.js`)]
    } catch (err) {
      if (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes(`/${name}/figures.js`)) return null
      throw err
    }
  }))
  return Object.fromEntries(entries.filter(Boolean))
}
