/**
 * The benches `npm run bench -- <name>` knows. A bench module exports
 * `name`, `summary`, `usage`, `options` (node:util parseArgs specs),
 * `normalize(values)` and `run(options, report)` resolving to
 * `{ title, markdown, charts, data }` (charts: see bench/report.js).
 */
import * as ingest from './ingest.js'

export const BENCHES = Object.freeze({
  [ingest.name]: ingest
})
