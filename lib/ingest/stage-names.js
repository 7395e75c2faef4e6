/**
 * The eight ingest stages, in order, as samples name them (`requests[].held`, lib/metrics/held.js):
 * plain data, which the page imports too (served as /lib/ingest/stage-names.js).
 */
export const INGEST_STAGES = Object.freeze(['negotiate', 'admit', 'read', 'inflate', 'records', 'parse', 'tally', 'answer'])
