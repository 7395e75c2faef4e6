/**
 * The experiments the lab can run, by name. Each is a module with a
 * parameter schema, `normalizeParams` and `run(ctx)`; the engine
 * (`engine.js`) runs whichever is asked for and knows none of them.
 */
import * as ingest from './ingest.js'

/** name -> experiment module */
export const EXPERIMENTS = Object.freeze({
  [ingest.name]: ingest
})
