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
