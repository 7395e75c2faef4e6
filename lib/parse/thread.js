/**
 * The body of a parse thread: receives batches, answers with parseBatch's
 * result (or, for a small body's whole document, parseDocument's); a list
 * of batches (one message for several) with a list of results, parsed one
 * at a time. Before each it writes the batch's index where the
 * pool can read it (workerData.progress): a thread that runs out of memory
 * sends no answer, and the pool must say which batch it was parsing.
 */
import { parentPort, workerData } from 'node:worker_threads'
import parseBatch, { parseDocument } from './worker.js'

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
