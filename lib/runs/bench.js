/**
 * The record of a bench that runs outside the experiment engine (`npm run bench -- ingest`,
 * `hostile`: a fresh lab per measurement, measured from outside). It has the bench's results
 * and the machine, but no timeline: its samples were never one lab's. A bench made from an
 * experiment (lib/measure/experiment-bench.js) is recorded by the lab it ran in instead.
 */
import { randomUUID } from 'node:crypto'
import { createRunStore, runsDir } from './store.js'
import { makeRecord, recordText } from './record.js'

/**
 * The results a bench's data gives a record: its cells and charts as the result contract has
 * them, its title as the caption, and the rest of its data under `details`, which the contract
 * leaves alone.
 * @param {{ title: string, charts?: object[], data: object }} bench what a bench's run resolved to
 */
export function benchResults ({ title, charts = [], data }) {
  const { cells, ...details } = data ?? {}
  return {
    caption: title,
    ...(Array.isArray(cells) ? { cells } : {}),
    ...(charts.length > 0 ? { charts } : {}),
    details
  }
}

/**
 * Write a bench's record to `<dataDir>/runs/`, keeping the last `keep`.
 * @param {{ dataDir: string, keep: number, diskQuota?: object|null, name: string, title: string, params: object,
 *   startedAt: number, endedAt: number, charts?: object[], data: object }} bench
 * @returns {Promise<{ id: string, path: string, bytes: number } | null>} null when no records are kept
 */
export async function saveBenchRecord (bench) {
  if (bench.keep === 0) return null
  const store = createRunStore({ dir: runsDir(bench.dataDir), keep: bench.keep, diskQuota: bench.diskQuota ?? null })
  const id = randomUUID()
  const text = recordText(function build () {
    return makeRecord({
      id,
      experiment: bench.name,
      title: bench.title,
      params: bench.params,
      status: 'done',
      source: 'bench',
      startedAt: bench.startedAt,
      endedAt: bench.endedAt,
      results: benchResults(bench),
      error: null,
      options: null
    }, { interval: null, samples: [], spans: [], marks: [], thinned: null })
  })
  const written = await store.save(id, text)
  return { id, ...written }
}
