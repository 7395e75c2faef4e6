/** A tree's memory without /proc: RSS from `ps`, the peak the largest sample (it can miss a shorter spike). */
import { execFile, execFileSync } from 'node:child_process'
import { promisify } from 'node:util'
import { KiB } from '../../lib/util/units.js'

const run = promisify(execFile)

/** Between two samples: each `ps` call costs CPU of its own. */
const SAMPLE_MS = 50

let available = null

/** Whether `ps -A -o pid=,ppid=,rss=` answers here (asked once). */
export function psAvailable () {
  if (available === null) {
    try {
      execFileSync('ps', ['-A', '-o', 'pid=,ppid=,rss='], { stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 })
      available = true
    } catch {
      available = false
    }
  }
  return available
}

/** The RSS of `root` and every process below it, in bytes; null when `root` is not in the table. */
export async function psTreeRss (root) {
  const { stdout } = await run('ps', ['-A', '-o', 'pid=,ppid=,rss='], { timeout: 5000, maxBuffer: 8 * 1024 * 1024 })
  const children = new Map()
  const rss = new Map()
  for (const line of stdout.split('\n')) {
    const [pid, ppid, kib] = line.trim().split(/\s+/).map(Number)
    if (!Number.isInteger(pid) || !Number.isInteger(ppid)) continue
    rss.set(pid, (Number.isFinite(kib) ? kib : 0) * KiB)
    if (!children.has(ppid)) children.set(ppid, [])
    children.get(ppid).push(pid)
  }
  if (!rss.has(root)) return null
  let total = 0
  const stack = [root]
  const seen = new Set()
  while (stack.length > 0) {
    const pid = stack.pop()
    if (seen.has(pid)) continue
    seen.add(pid)
    total += rss.get(pid) ?? 0
    for (const child of children.get(pid) ?? []) stack.push(child)
  }
  return total
}

/** Sample the tree's RSS until `stop()`, which resolves to the largest sample (null when none read it). */
export function samplePeak (root) {
  let running = true
  let peak = null
  async function sampleLoop () {
    while (running) {
      const rss = await psTreeRss(root).catch(function unread () { return null })
      if (rss !== null && (peak === null || rss > peak)) peak = rss
      if (running) await new Promise(function pause (resolve) { setTimeout(resolve, SAMPLE_MS) })
    }
  }
  const loop = sampleLoop()
  return {
    stop: async function stopSampling () {
      running = false
      await loop
      const last = await psTreeRss(root).catch(function unread () { return null })
      if (last !== null && (peak === null || last > peak)) peak = last
      return peak
    }
  }
}
