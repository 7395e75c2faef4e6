/** The registry: every experiment the lab can run, by name, a folder each (what a folder holds: experiments/README.md). */
import * as ingest from './ingest/index.js'
import * as upload from './upload/index.js'
import * as chunkSize from './chunk-size/index.js'
import * as tinyWrites from './tiny-writes/index.js'
import * as dbExport from './db-export/index.js'
import * as zipBomb from './zip-bomb/index.js'
import * as abortUpload from './abort-upload/index.js'
import * as backpressure from './backpressure/index.js'

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

/** Routes the folders add, mounted by app.js: the app and the routes reach a folder through this registry only (test/layout.test.js). */
export { abortUploadRoutes } from './abort-upload/routes.js'
export { backpressureRoutes } from './backpressure/routes.js'
export { chunkSizeRoutes } from './chunk-size/routes.js'
export { uploadRoutes } from './upload/routes.js'
/** The upload experiment's housekeeping: parts a killed worker left, uploads of earlier runs. */
export { normalizeUploadOptions, removeDeadParts, removeOldUploads } from './upload/server.js'

function folderOf (name) {
  const known = [...Object.keys(EXPERIMENTS), ...BENCH_ONLY]
  if (!known.includes(name)) throw new TypeError(`no experiment "${name}": the registry has ${known.join(', ')}`)
  return name
}

/** Every folder's bench.js by name: the command-line side, loaded only when asked. */
export async function loadBenches () {
  const entries = await Promise.all([...Object.keys(EXPERIMENTS), ...BENCH_ONLY].map(async function loadBench (name) {
    return [name, await import(`./${folderOf(name)}/bench.js`)]
  }))
  return Object.fromEntries(entries)
}

/** Every experiment's figures.js (`screenshot`, `demo`) by name, for those that have one. */
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
