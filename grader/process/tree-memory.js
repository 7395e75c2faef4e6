/** A tree's memory over a load, read from outside (VmHWM, else sampled with `ps`), and the budget watch. */
import { performance } from 'node:perf_hooks'
import { procAvailable } from '../../lib/util/platform.js'
import { psAvailable, psTreeRss, samplePeak } from './ps-memory.js'
import { readTreeMemory, resetTreePeaks, signalTree, treePids } from './process-tree.js'

/** How often the watch reads the tree's RSS, and how often it looks for new members (a full walk of /proc). */
const WATCH_MS = 25
const TREE_SCAN_MS = 500
/** Where there is no /proc: a `ps` table costs a process spawn, so the watch reads it less often. */
const PS_WATCH_MS = 200

/**
 * @typedef {{ outcome: any, ms: number, idleRss: number|null, peakRss: number|null, growth: number|null,
 *   peakSource: 'kernel peak'|'sampled peak'|null, unreadable: boolean }} TreeMeasure
 */

/** The tree's peak over `load`, idle read and peaks reset first; `tree.killedPeak()`: the RSS the watch killed it at. */
export async function measureTree (tree, load) {
  const readable = procAvailable()
  if (!readable && psAvailable()) return measureWithPs(tree.root.pid, load)
  const before = readable ? treePids(tree.root) : [tree.root.pid]
  const idle = readable ? readTreeMemory(before) : null
  const reset = idle !== null && resetTreePeaks(before)
  const started = performance.now()
  const outcome = await load()
  const ms = performance.now() - started
  const after = tree.alive() && readable ? readTreeMemory(treePids(tree.root)) : null
  // killed past the budget: the peak is at least what the watch saw
  const peak = after?.peak ?? tree.killedPeak()
  const measured = reset && idle !== null && peak !== null
  return {
    outcome, ms, idleRss: idle?.rss ?? null, peakRss: measured ? peak : null,
    growth: measured ? Math.max(0, peak - idle.rss) : null, peakSource: measured ? 'kernel peak' : null,
    unreadable: !readable
  }
}

/** `measureTree` where there is no /proc: the tree's RSS from `ps`, its peak sampled while `load` runs. */
async function measureWithPs (pid, load) {
  const idle = await psTreeRss(pid).catch(function unread () { return null })
  const sampler = samplePeak(pid)
  const started = performance.now()
  let outcome
  let peak
  try {
    outcome = await load()
  } finally {
    peak = await sampler.stop()
  }
  const ms = performance.now() - started
  const measured = idle !== null && peak !== null
  return {
    outcome, ms, idleRss: idle, peakRss: measured ? peak : null, growth: measured ? Math.max(0, peak - idle) : null,
    peakSource: measured ? 'sampled peak' : null, unreadable: !measured
  }
}

/** Hand `onMemory` the tree's RSS every WATCH_MS from /proc, or PS_WATCH_MS from `ps`; without either, nothing. */
export function watchTree (root, onMemory) {
  if (!procAvailable()) return psAvailable() ? watchWithPs(root.pid, onMemory) : { stop: function nothingWatched () {} }
  let pids = treePids(root)
  const scan = setInterval(function findMembers () { pids = treePids(root) }, TREE_SCAN_MS)
  scan.unref()
  const watch = setInterval(function watchMemory () {
    const memory = readTreeMemory(pids)
    if (memory !== null) onMemory(memory)
  }, WATCH_MS)
  watch.unref()
  return {
    stop: function stopWatching () {
      clearInterval(scan)
      clearInterval(watch)
    }
  }
}

/** `watchTree` where there is no /proc: one `ps` table at a time, never two at once. */
function watchWithPs (pid, onMemory) {
  let reading = false
  let stopped = false
  const watch = setInterval(function watchMemory () {
    if (reading) return
    reading = true
    psTreeRss(pid).then(function judge (rss) {
      if (!stopped && rss !== null) onMemory({ rss, peak: rss, processes: null })
    }, function unreadable () {}).finally(function done () { reading = false })
  }, PS_WATCH_MS)
  watch.unref()
  return {
    stop: function stopWatching () {
      stopped = true
      clearInterval(watch)
    }
  }
}

/** The budget watch: the highest RSS in `target.maxRss`; past `budget` (0: none) the tree is killed, `lastDeath` says why. */
export function watchWithinBudget (target, root, budget, say) {
  const pid = root.pid
  return watchTree(root, function judgeMemory (memory) {
    if (memory.rss > target.maxRss) target.maxRss = memory.rss
    if (budget > 0 && memory.rss > budget && target.alive) {
      target.lastDeath = { reason: 'memory', pid, rss: memory.rss, message: say(memory.rss, budget) }
      signalTree(root, 'SIGKILL')
    }
  })
}
