/**
 * The lab's allocation sampler inside a process the grader measures (the student's process, a Node service it started): started
 * before the graded code loads, so that the code meets the wrapped allocators, and its sites since the start written to a file
 * every WRITE_MS, which the grader reads (grader/checks/memory-sites.js). V8's heap is not sampled: under Node's permission model
 * there is no inspector, so Buffers and the strings made of them are what every target reports, alike. The code graded shares the
 * process and could forge or hide what is written: the grader takes it as a pointer to a line, never as a figure
 * (docs/grading-a-service.md).
 */
import fs from 'node:fs'
import { createAllocationSampler } from '../../lib/allocation/sampler.js'
import { siteKey } from '../../lib/allocation/site.js'

/** Mean bytes between two samples: a few hundred samples in the grader's smallest large body. */
export const SITES_INTERVAL_BYTES = 128 * 1024
const WRITE_MS = 200
/** Sites a window hands over; the table keeps every site any window named. */
const TOP = 200

/**
 * Start sampling, and write `{ pid, at, sites }` to `file` every WRITE_MS: `at` the writer's clock (ms since the epoch), `sites`
 * each site's bytes allocated since the start, and what it holds now where that is known.
 */
export function startSiteWriter ({ file, preferFiles = null }) {
  const sampler = createAllocationSampler({ intervalBytes: SITES_INTERVAL_BYTES, heap: false, strings: true, top: TOP, preferFiles })
  const table = new Map()
  sampler.start()
  const timer = setInterval(function writeSites () {
    for (const site of sampler.window().sites) {
      const key = siteKey(site)
      const known = table.get(key)
      if (known === undefined) table.set(key, { ...site })
      else {
        known.allocatedBytes += site.allocatedBytes
        known.heldBytes = site.heldBytes
        known.samples += site.samples
      }
    }
    const doc = JSON.stringify({ pid: process.pid, at: Date.now(), sites: [...table.values()] })
    try {
      // whole or not at all: the grader never reads half a table
      fs.writeFileSync(`${file}.part`, doc)
      fs.renameSync(`${file}.part`, file)
    } catch {
      // a folder gone (the grader is stopping it): nothing to report to
    }
  }, WRITE_MS)
  timer.unref()
  return {
    stop: function stopSiteWriter () {
      clearInterval(timer)
      sampler.stop()
    }
  }
}
