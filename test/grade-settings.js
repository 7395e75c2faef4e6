/**
 * The grader's settings the grade specs run with: the full card's checks on
 * small bodies, so that a card takes seconds, not minutes
 * (grader/checks/settings.js names each setting). A spec that grades other sizes
 * says which with `smallSettings({ ... })`.
 */
export const SMALL = Object.freeze({
  sizes: [2e6, 8e6, 24e6],
  concurrency: [1, 8],
  concurrencyBytes: 6e6,
  speedBytes: 8e6,
  // three rounds, as the presets take: the speed verdicts stand on medians, not on one turn of a busy machine
  speedRepeat: 3,
  bombBytes: 3e8,
  aborts: 5,
  reference: false,
  // generous: a body sent 1 to 7 bytes a write beside two CPU hogs took over 10 s; only the
  // handler that never answers would wait the whole time, and it has its own
  requestMs: 30000,
  bombMs: 20000
})

/** SMALL with `overrides`. */
export function smallSettings (overrides) {
  return Object.freeze({ ...SMALL, ...overrides })
}
