/**
 * The lab's memory budget: how much RSS the lab's worker process may use
 * before the supervisor kills it (as a container's OOM killer would), and
 * what every route that buffers must fit inside. One function decides the
 * default so the supervisor (which enforces it) and the app (which admits
 * requests within it) agree.
 */
import os from 'node:os'
import { GiB, MiB } from '../util/units.js'

/** The budget is never set below this by default: the lessons need room for /bad's 500 MB runs on a small scale. */
const MIN_DEFAULT_BUDGET = GiB

/**
 * The default budget: a quarter of the machine's memory (or of the cgroup
 * limit where one is set), at least 1 GiB. A 16 GiB laptop gets 4 GiB,
 * enough for the reference's 500 MB /bad run (its peak: docs/ingest.md).
 * @param {{ totalmem?: number, constrained?: number }} [machine] for tests
 * @returns {number} bytes, a whole number of MiB
 */
export function defaultMemoryBudget (machine = {}) {
  const total = machine.totalmem ?? os.totalmem()
  const constrained = machine.constrained ?? (typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : 0)
  const physical = constrained > 0 && constrained < total ? constrained : total
  const quarter = Math.floor(physical / 4 / MiB) * MiB
  return Math.max(MIN_DEFAULT_BUDGET, quarter)
}
