/** The checks of the five areas in run order, each { area, name, meaning, limit, hint, trips, run(ctx) }. */
import { checks as correctness } from './correctness.js'
import { checks as memory } from './memory.js'
import { checks as speed } from './speed.js'
import { checks as safety } from './safety.js'
import { checks as resilience } from './resilience.js'

export const AREAS = Object.freeze(['correctness', 'memory', 'speed', 'safety', 'resilience'])

export const CHECKS = Object.freeze([...correctness, ...memory, ...speed, ...safety, ...resilience])

/** The checks of `areas` (all when not given), in order: what a card of those areas holds; TypeError for an unknown area. */
export function checksOf (areas) {
  if (areas === undefined || areas === null) return CHECKS
  if (!Array.isArray(areas) || areas.length === 0) throw new TypeError(`areas must be a list of ${AREAS.join(', ')}`)
  for (const area of areas) {
    if (!AREAS.includes(area)) throw new TypeError(`unknown area "${area}": try ${AREAS.join(', ')}`)
  }
  return CHECKS.filter(function asked (check) { return areas.includes(check.area) })
}
