/**
 * `npm run profile -- heap <route>`: the lab's own allocation sampler (docs/metrics.md, "Allocation
 * sites") read from the /metrics stream during the load, summed as a run record sums it
 * (lib/runs/sites.js): which lines allocated the bytes and which hold them.
 */
import fs from 'node:fs'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { formatMiB } from '../../lib/util/units.js'
import { openEventStream } from '../../lib/measure/event-stream.js'
import { readWindow, siteLine } from '../../lib/allocation/site.js'
import { siteShare, summariseWindows } from '../../lib/runs/sites.js'
import { ROUTES, progressLogger, runLoad } from './load.js'
import { loadOptions, startProfileServer, watchMemory } from './node-profilers.js'
import { labDataDir } from './settings.js'

/** The sampler closes a window every 2 s (lib/metrics/alloc-sites.js): one more after the load. */
const LAST_WINDOW_MS = 2500
/** The file the sites are written to, in the results' folder. */
export const SITES_FILE = 'allocation-sites.json'

/**
 * The load with the sampler on, written to allocation-sites.json: the sites heaviest first,
 * `allocatedBytes` all the route allocated in its windows (what a site's share is of), `lab` the
 * lab's own code's sites, `heldPeak` the most one request held, or null.
 */
export async function runSiteSampler (args, body, log) {
  log('starting: node scripts/profile/server.js, its allocation sampler asked for by a /metrics stream')
  const lab = await startProfileServer([], ['--data-dir', labDataDir(args)])
  log(`the lab listens on ${lab.url} (pid ${lab.pid})`)
  const stream = await openEventStream(`${lab.url}/metrics?interval=1000&allocationSites=1`)
  const stopWatching = watchMemory(lab.pid)
  let load
  let memory
  try {
    load = await runLoad({ ...loadOptions(args, lab.url, body), onProgress: progressLogger(log) })
    await delay(LAST_WINDOW_MS)
  } finally {
    memory = stopWatching()
    stream.close()
    await fs.promises.writeFile(path.join(args.out, 'memory.csv'), memory.csv)
    await lab.stop()
  }
  const route = ROUTES[args.route].path.slice(1)
  const windows = []
  for (const event of stream.events) {
    if (event.event !== 'sites') continue
    const window = readWindow(event.data)
    if (window !== null) windows.push({ ...window, routes: [route] })
  }
  const summary = summariseWindows(windows)
  const sites = summary.routes[0]?.sites ?? []
  const allocatedBytes = summary.routes[0]?.allocatedBytes ?? null
  let heldPeak = null
  for (const { event, data } of stream.events) {
    if (event === 'request' && data?.phase === 'end' && data.route === route && Number.isFinite(data.heldPeak)) {
      heldPeak = Math.max(heldPeak ?? 0, data.heldPeak)
    }
  }
  const collections = countCollections(stream.events)
  const file = path.join(args.out, SITES_FILE)
  const written = { route, windows: windows.length, allocatedBytes, sites, lab: summary.lab, heldPeak, collections }
  await fs.promises.writeFile(file, JSON.stringify(written, null, 2) + '\n')
  return { load, memory, route, sites, windows: windows.length, allocatedBytes, heldPeak, collections, file }
}

/** The main thread's mark-compacts in the stream's samples, and those the lab forced reading the heap profile (lib/util/lab-gc.js). */
export function countCollections (events) {
  const counted = { markCompacts: 0, labMarkCompacts: 0, omitted: 0 }
  for (const event of events) {
    if (event.event !== 'sample') continue
    counted.omitted += event.data?.gcEventsOmitted ?? 0
    for (const e of event.data?.gcEvents ?? []) {
      if (e.kind !== 'mark-compact') continue
      counted.markCompacts++
      if (e.cause === 'lab') counted.labMarkCompacts++
    }
  }
  return counted
}

export function collectionsLine ({ markCompacts, labMarkCompacts, omitted }) {
  return `  the main thread's mark-compacts: ${markCompacts}, ` +
    `of them the lab's (each forced by a read of the heap profile): ${labMarkCompacts}` +
    (omitted > 0 ? ` (${omitted} collections of the samples' windows left out)` : '')
}

/** The heaviest site's share of the route's allocation (docs/metrics.md, "A site's share"), and the most one request held. */
export function topShareLine (route, sites, allocatedBytes, heldPeak) {
  const top = sites[0]
  const share = top === undefined ? null : siteShare(top, { allocatedBytes })
  if (share === null) return `  /${route}'s top site's share of its allocation: not known (no site, or no window of the route)`
  const held = heldPeak > 0 ? `; the most one request held: ${formatMiB(heldPeak)}` : ''
  return `  top site ${siteLine(top)} allocated ${formatMiB(top.allocatedBytes)}: share ${share.toFixed(2)} ` +
    `of /${route}'s sampled allocation (${formatMiB(allocatedBytes)})${held}`
}

/** The lines the profiler prints: the heaviest sites, each its line, kind, thread and MiB. */
export function siteLines (sites, most = 10) {
  if (sites.length === 0) return ['  no allocation sites were sampled: the load was too short for a window (2 s), or nothing allocated']
  return sites.slice(0, most).map(function line (s) {
    const held = s.heldBytes === null ? 'held not known' : `${formatMiB(s.heldBytes)} held`
    const where = `${s.kind.padEnd(6)} ${s.thread.padEnd(14)} ${siteLine(s)}`
    return `  ${formatMiB(s.allocatedBytes).padStart(11)} allocated, ${held.padEnd(15)} ${where}`
  })
}
