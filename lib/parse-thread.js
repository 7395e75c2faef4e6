/**
 * The body of a parse thread: receives batches, answers with parseBatch's result.
 */
import { parentPort } from 'node:worker_threads'
import parseBatch from './parse-worker.js'

parentPort.on('message', function onBatch ({ id, task }) {
  let answer
  try {
    answer = { id, result: parseBatch(task) }
  } catch (err) {
    answer = { id, error: { message: err.message, stack: err.stack } }
  }
  parentPort.postMessage(answer)
})
