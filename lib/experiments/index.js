/**
 * The experiments the lab can run, by name. Each is a module with a
 * parameter schema, `normalizeParams` and `run(ctx)`; the engine
 * (`engine.js`) runs whichever is asked for and knows none of them.
 */
import * as ingest from '../../experiments/ingest/index.js'
import * as upload from '../../experiments/upload/index.js'
import * as chunkSize from '../../experiments/chunk-size/index.js'
import * as tinyWrites from '../../experiments/tiny-writes/index.js'
import * as dbExport from '../../experiments/db-export/index.js'
import * as zipBomb from '../../experiments/zip-bomb/index.js'
import * as abortUpload from '../../experiments/abort-upload/index.js'

/** name -> experiment module */
export const EXPERIMENTS = Object.freeze({
  [ingest.name]: ingest,
  [upload.name]: upload,
  [chunkSize.name]: chunkSize,
  [tinyWrites.name]: tinyWrites,
  [dbExport.name]: dbExport,
  [zipBomb.name]: zipBomb,
  [abortUpload.name]: abortUpload
})
