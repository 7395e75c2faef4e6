/**
 * The checks of the five areas, in the order a grading runs them. Each check
 * is { area, name, meaning, limit, hint, trips, run(ctx) }: `run` sends its
 * bodies through the context the runner gives it (grader/run/) and returns
 * the outcome the card records.
 */
import { checks as correctness } from './correctness.js'
import { checks as memory } from './memory.js'
import { checks as speed } from './speed.js'
import { checks as safety } from './safety.js'
import { checks as resilience } from './resilience.js'

/** The areas, in the order they run and the card lists them. */
export const AREAS = Object.freeze(['correctness', 'memory', 'speed', 'safety', 'resilience'])

/** Every check, in the order they run. */
export const CHECKS = Object.freeze([...correctness, ...memory, ...speed, ...safety, ...resilience])

/**
 * The checks of the areas asked for, in their order: what a grading runs, and so what
 * a card of those areas holds, no more and no fewer (card-json.js holds a card to it).
 * @param {string[]|null} [areas] all of them when not given
 * @returns {ReadonlyArray<object>}
 * @throws {TypeError} for an area that does not exist
 */
export function checksOf (areas) {
  if (areas === undefined || areas === null) return CHECKS
  if (!Array.isArray(areas) || areas.length === 0) throw new TypeError(`areas must be a list of ${AREAS.join(', ')}`)
  for (const area of areas) {
    if (!AREAS.includes(area)) throw new TypeError(`unknown area "${area}": try ${AREAS.join(', ')}`)
  }
  return CHECKS.filter(function asked (check) { return areas.includes(check.area) })
}
