/**
 * The benches `npm run bench -- <name>` knows. A bench module exports
 * `name`, `summary`, `usage`, `options` (node:util parseArgs specs),
 * `normalize(values)` and `run(options, report)` resolving to
 * `{ title, markdown, charts, data }` (charts: see lib/measure/report.js).
 */
import * as ingest from '../../experiments/ingest/bench.js'
import * as upload from '../../experiments/upload/bench.js'
import * as chunkSize from '../../experiments/chunk-size/bench.js'
import * as tinyWrites from '../../experiments/tiny-writes/bench.js'
import * as dbExport from '../../experiments/db-export/bench.js'
import * as hostile from './hostile.js'
import * as abortUpload from '../../experiments/abort-upload/bench.js'
import * as zipBomb from '../../experiments/zip-bomb/bench.js'

export const BENCHES = Object.freeze({
  [ingest.name]: ingest,
  [upload.name]: upload,
  [chunkSize.name]: chunkSize,
  [tinyWrites.name]: tinyWrites,
  [dbExport.name]: dbExport,
  [hostile.name]: hostile,
  [abortUpload.name]: abortUpload,
  [zipBomb.name]: zipBomb
})
