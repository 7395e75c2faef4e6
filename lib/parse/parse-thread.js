/**
 * The parse thread itself: the pool (lib/parse/pool.js) starts one per
 * thread. It answers a task with parseBatch's result (or parseDocument's,
 * for a small body's whole document), and a list of tasks, sent in one
 * message, with a list of results. Before each task it writes the task's
 * index where the pool can read it (workerData.progress): a thread that runs
 * out of memory sends no answer, and the pool must say which batch it was on.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { parseBatch, parseDocument } from './parse-batch.js'

const progress = workerData?.progress ? new Int32Array(workerData.progress) : new Int32Array(1)

/** A whole small document (kind 'document': parseDocument), or one batch (parseBatch). */
function parseTask (task) {
  return task.kind === 'document' ? parseDocument(task) : parseBatch(task)
}

function parseAll (tasks) {
  const results = new Array(tasks.length)
  for (let k = 0; k < tasks.length; k++) {
    Atomics.store(progress, 0, k)
    results[k] = parseTask(tasks[k])
  }
  return results
}

parentPort.on('message', function onBatch ({ id, task }) {
  let answer
  try {
    Atomics.store(progress, 0, 0)
    answer = { id, result: Array.isArray(task) ? parseAll(task) : parseTask(task) }
  } catch (err) {
    answer = { id, error: { message: err.message, stack: err.stack } }
  }
  parentPort.postMessage(answer)
})
