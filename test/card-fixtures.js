/**
 * A card as grade() returns it, made without grading: every check of the areas
 * asked for (the grader's own list, checks/index.js), with the details its
 * measures come from (grader/card/measures.js). The collect and baseline specs
 * turn it into a --json card with cardJson() and then forge it.
 */
import { AREAS, checksOf } from '../grader/checks/index.js'

/** The figures a card's details give, as grader/card/measures.js reads them. */
export const FIGURES = Object.freeze({ slope: 1.2, peak: 14.5, concurrency: 0.4, ratio: 1.1, mbps: 17, bomb: 9.3 })

/**
 * @param {{ areas?: string[], preset?: string, seed?: number, labVersion?: string, handler?: string,
 *   digest?: string|null, failing?: string[], figures?: Partial<typeof FIGURES> }} [options]
 *   `failing`: the names of the checks that fail; `figures`: FIGURES with these changed
 */
export function gradedCard (options = {}) {
  const given = Object.entries(options.figures ?? {}).filter(function set ([, value]) { return value !== undefined })
  const figures = { ...FIGURES, ...Object.fromEntries(given) }
  const failing = options.failing ?? []
  const checks = checksOf(options.areas ?? AREAS).map(function record (check) {
    const pass = !failing.includes(check.name)
    return { area: check.area, name: check.name, pass, figure: 'f', limit: 'l', meaning: 'm', hint: 'h', reason: null, ms: 10, details: detailsOf(check, figures) }
  })
  return {
    handler: options.handler ?? 'http://127.0.0.1:3100/ingest',
    preset: options.preset ?? 'quick',
    seed: options.seed ?? 7,
    labVersion: options.labVersion ?? '0.1.0',
    digest: options.digest ?? null,
    startedAt: '2026-11-27T10:00:00.000Z',
    ms: 60_000,
    passed: checks.every(function passed (c) { return c.pass }),
    encodings: null,
    lab: { restarts: 0 },
    checks
  }
}

function detailsOf (check, figures) {
  if (check.name === 'growth against body size') return { slope: figures.slope, unit: 'MiB per 100 MB', points: [{ x: 5, growthMiB: 3 }, { x: 50, growthMiB: figures.peak }] }
  if (check.name === 'growth against concurrency') return { slope: figures.concurrency, unit: 'MiB per upload in flight', points: [{ x: 1, growthMiB: 2 }, { x: 8, growthMiB: 5 }] }
  if (check.area === 'speed') return { studentMBps: figures.mbps, ratio: figures.ratio }
  if (check.name === 'zip bomb: ratio') return { variant: 'ratio', sends: [{ growthMiB: figures.bomb }, { growthMiB: 2 }] }
  return {}
}
