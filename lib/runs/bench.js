/**
 * The record of a run measured outside the experiment engine: a bench of fresh labs (`npm run bench -- ingest`, `hostile`) or a
 * grading (`npm run grade` of one handler or service). It has the run's results and the machine, but no timeline: its processes
 * were many, each measured from outside, none sampled by one lab's /metrics. A bench made from an experiment
 * (lib/measure/experiment-bench.js) is recorded by the lab it ran in instead.
 */
import { randomUUID } from 'node:crypto'
import { createRunStore, runsDir } from './store.js'
import { makeRecord, recordText } from './record.js'

/**
 * The results a bench's data gives a record: its cells and charts as the result contract has them, its title as the caption, and
 * the rest of its data under `details`, which the contract leaves alone.
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
 * Write the record of a run measured outside the engine (`source` 'bench' or 'grade') to `<dataDir>/runs/`, keeping the last
 * `keep`: `{ id, path, bytes }`, null when no records are kept.
 */
export async function saveOutsideRecord (run) {
  if (run.keep === 0) return null
  const store = createRunStore({ dir: runsDir(run.dataDir), keep: run.keep, diskQuota: run.diskQuota ?? null })
  const id = randomUUID()
  const text = recordText(function build () {
    return makeRecord({
      id,
      experiment: run.experiment,
      title: run.title,
      params: run.params,
      status: run.status ?? 'done',
      source: run.source,
      startedAt: run.startedAt,
      endedAt: run.endedAt,
      results: run.results,
      error: null,
      options: null
    }, { interval: null, samples: [], spans: [], marks: [], thinned: null })
  })
  const written = await store.save(id, text)
  return { id, ...written }
}

/** A bench's record (saveOutsideRecord with the bench's results). */
export function saveBenchRecord (bench) {
  return saveOutsideRecord({ ...bench, experiment: bench.name, source: 'bench', results: benchResults(bench) })
}
