/**
 * Young-generation collections, by the names lib/metrics/gc-events.js gives V8's: many and short, the first left out of a full
 * window. Plain data, which the page imports too (/lib/metrics/gc-kinds.js).
 */
export const MINOR_KINDS = Object.freeze(['scavenge', 'minor-mark-sweep'])
