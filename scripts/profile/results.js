/** The profiler's results: what each file is, which thread wrote it, and how to open it. */
import fs from 'node:fs'
import path from 'node:path'

/** What each kind of result is, and how to open it. */
export const HOW_TO_OPEN = Object.freeze({
  '.html': 'open it in a browser (it is self-contained: no server needed)',
  '.heapprofile': 'Chrome DevTools, Memory tab: "Load profile" (or "Load"), pick the file; the Chart and ' +
    'Heavy (Bottom Up) views show which functions allocated the memory not yet collected when the lab stopped',
  '.cpuprofile': 'Chrome DevTools, Performance panel: "Load profile" (the upload arrow), pick the file; or ' +
    'More tools > JavaScript Profiler > Load, for the Chart, Heavy and Tree views',
  '.heapsnapshot': 'Chrome DevTools, Memory tab: "Load profile" (or "Load"), pick each file; select the ' +
    'later snapshot and choose "Comparison" against the earlier one to see what the load left behind',
  '.csv': 'the server\'s RSS every 250 ms during the load, read from /proc (ms, rss, kernel peak)',
  '.json': 'allocation-sites.json: the lines that allocated and held the bytes, summed over the load, heaviest first (any editor)'
})

/** `Heap.20260101.120000.4242.0.001.heapprofile`: thread 0 is the main thread, others the parse threads. */
function threadOf (name) {
  const match = /^(?:Heap|CPU)\.\d+\.\d+\.\d+\.(\d+)\.\d+\./.exec(name)
  if (!match) return ''
  return match[1] === '0' ? ' (main thread)' : ` (worker thread ${match[1]}: a parse thread)`
}

export async function listResults (dir) {
  const results = []
  const names = await fs.promises.readdir(dir).catch(function none () { return [] })
  for (const name of names.sort()) {
    const ext = path.extname(name)
    // profile.json, the run's summary, is written after the results are listed
    if (!HOW_TO_OPEN[ext] || name === 'profile.json') continue
    const stat = await fs.promises.stat(path.join(dir, name))
    results.push({ file: path.join(dir, name), bytes: stat.size, kind: ext, thread: threadOf(name) })
  }
  return results
}
