// The lab's memory budget: the RSS past which the supervisor kills the worker, and what every buffering route
// must fit in. One function decides the default, so the supervisor and the app agree.
import os from 'node:os'
import { GiB, MiB } from '../util/units.js'

/** The budget is never set below this by default: the lessons need room for /bad's 500 MB runs on a small scale. */
const MIN_DEFAULT_BUDGET = GiB

/**
 * The default budget in whole MiB: a quarter of the machine's memory (or of its cgroup limit), at least 1 GiB,
 * enough for the reference's /bad run (its peak: docs/ingest.md). `machine` is for tests.
 */
export function defaultMemoryBudget (machine = {}) {
  const total = machine.totalmem ?? os.totalmem()
  const constrained = machine.constrained ?? (typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : 0)
  const physical = constrained > 0 && constrained < total ? constrained : total
  const quarter = Math.floor(physical / 4 / MiB) * MiB
  return Math.max(MIN_DEFAULT_BUDGET, quarter)
}
