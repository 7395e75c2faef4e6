/**
 * `npm run profile -- heap <route>` by default: the lab's own allocation sampler (lib/allocation/,
 * docs/metrics.md "Allocation sites") while the load runs, read from the /metrics stream as the
 * dashboard reads it, and what it shows written beside the other results: which lines allocated
 * the bytes and which hold them, V8 heap and Buffers alike, summed over the load as a run
 * record sums them (lib/runs/sites.js).
 */
import fs from 'node:fs'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { formatMiB } from '../../lib/util/units.js'
import { openEventStream } from '../../lib/measure/event-stream.js'
import { readWindow, siteLine } from '../../lib/allocation/site.js'
import { siteShare, summariseWindows } from '../../lib/runs/sites.js'
import { ROUTES, runLoad } from './load.js'
import { startProfileServer, progressLogger, watchMemory } from './node-profilers.js'
import { labDataDir } from './settings.js'

/** The sampler closes a window every 2 s (lib/metrics/alloc-sites.js): one more after the load. */
const LAST_WINDOW_MS = 2500
/** The file the sites are written to, in the results' folder. */
export const SITES_FILE = 'allocation-sites.json'

/**
 * Run the load with the sampler on, and write `allocation-sites.json`:
 * `{ route, windows, allocatedBytes, sites, lab, heldPeak }`, the sites heaviest first (allocated plus
 * held), `allocatedBytes` all the route allocated in its windows (the whole a site's share is of),
 * `lab` the lab's own code's sites apart, `heldPeak` the most one request held (the ledger's), or null.
 * @returns {Promise<{ load: object, memory: object, sites: object[], windows: number, allocatedBytes: number|null, heldPeak: number|null, file: string }>}
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
    load = await runLoad({ url: lab.url, route: args.route, body, connections: args.connections, duration: args.duration, amount: args.amount, dataDir: labDataDir(args), onProgress: progressLogger(log) })
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
  for (const e of stream.events) {
    if (e.event === 'request' && e.data?.phase === 'end' && e.data.route === route && Number.isFinite(e.data.heldPeak)) heldPeak = Math.max(heldPeak ?? 0, e.data.heldPeak)
  }
  const collections = countCollections(stream.events)
  const file = path.join(args.out, SITES_FILE)
  await fs.promises.writeFile(file, JSON.stringify({ route, windows: windows.length, allocatedBytes, sites, lab: summary.lab, heldPeak, collections }, null, 2) + '\n')
  return { load, memory, route, sites, windows: windows.length, allocatedBytes, heldPeak, collections, file }
}

/**
 * The main thread's mark-compacts the stream's samples carried while the sampler ran, and how many
 * of them the lab forced by reading the heap profile (`cause: 'lab'`, lib/util/lab-gc.js).
 */
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

/** The line the profiler prints of them. */
export function collectionsLine ({ markCompacts, labMarkCompacts, omitted }) {
  return `  the main thread's mark-compacts: ${markCompacts}, of them the lab's (each forced by a read of the heap profile): ${labMarkCompacts}` +
    (omitted > 0 ? ` (${omitted} collections of the samples' windows left out)` : '')
}

/**
 * The heaviest site's share of all the route allocated in its windows (docs/metrics.md, "A site's
 * share"), and beside it, not as a ratio, the most one request held.
 */
export function topShareLine (route, sites, allocatedBytes, heldPeak) {
  const top = sites[0]
  const share = top === undefined ? null : siteShare(top, { allocatedBytes })
  if (share === null) return `  /${route}'s top site's share of its allocation: not known (no site, or no window of the route)`
  const held = heldPeak > 0 ? `; the most one request held: ${formatMiB(heldPeak)}` : ''
  return `  top site ${siteLine(top)} allocated ${formatMiB(top.allocatedBytes)}: share ${formatShare(share)} of /${route}'s sampled allocation ` +
    `(${formatMiB(allocatedBytes)})${held}`
}

function formatShare (ratio) {
  return ratio.toFixed(2)
}

/** The lines the profiler prints: the heaviest sites, each its line, kind, thread and MiB. */
export function siteLines (sites, most = 10) {
  if (sites.length === 0) return ['  no allocation sites were sampled: the load was too short for a window (2 s), or nothing allocated']
  return sites.slice(0, most).map(function line (s) {
    const held = s.heldBytes === null ? 'held not known' : `${formatMiB(s.heldBytes)} held`
    return `  ${formatMiB(s.allocatedBytes).padStart(11)} allocated, ${held.padEnd(15)} ${s.kind.padEnd(6)} ${s.thread.padEnd(14)} ${siteLine(s)}`
  })
}
