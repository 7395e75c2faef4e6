/**
 * The parse thread, one per thread of the pool (pool.js). It answers a task with parseBatch's result
 * (parseDocument's for a small body's document), a list of tasks with a list. Before each task it
 * writes the task's index to workerData.progress: a thread that runs out of memory sends no answer,
 * and the pool must say which batch it was on. A message with `sites` drives its allocation sampler
 * (thread-sites.js): 'start', 'stop', or 'window', a question answered `{ asked: id, answer }`, each in
 * turn among the tasks; until the first 'start' and after 'stop' the thread pays nothing for it.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { parseBatch, parseDocument } from './parse-batch.js'
import { createAllocationSampler } from '../allocation/sampler.js'

const progress = workerData?.progress ? new Int32Array(workerData.progress) : new Int32Array(1)

/** A whole small document (kind 'document': parseDocument), or one batch (parseBatch). */
function parseTask (task) {
  return task.kind === 'document' ? parseDocument(task) : parseBatch(task)
}

/** The buffers a list of tasks hands back (`giveBack`: a batch's own, or a block several batches are views of), each once. */
function buffersBack (tasks, kind) {
  const buffers = new Set()
  for (const task of tasks) if (task.giveBack === kind) buffers.add(task.bytes.buffer)
  return [...buffers]
}

function parseAll (tasks) {
  const results = new Array(tasks.length)
  for (let k = 0; k < tasks.length; k++) {
    Atomics.store(progress, 0, k)
    results[k] = parseTask(tasks[k])
  }
  return results
}

/** The thread's allocation sampler, made on the first 'start'. */
let sampler = null

function answerSites ({ sites: verb, ask, intervalBytes, epoch }) {
  if (verb === 'start') {
    if (sampler === null || sampler.options.intervalBytes !== intervalBytes) {
      sampler?.stop()
      // what the thread allocates: it holds one batch at a time, dead before any window sees it
      sampler = createAllocationSampler({ intervalBytes, heap: 'allocated' })
    }
    sampler.start()
  } else if (verb === 'stop') {
    sampler?.stop()
  } else if (verb === 'window') {
    parentPort.postMessage({ asked: ask, answer: sampler?.active ? sampler.window({ epoch: epoch === true }) : null })
  }
}

parentPort.on('message', function onBatch (message) {
  if (message.sites !== undefined) {
    try {
      answerSites(message)
    } catch (err) {
      // a question is always answered: the pool waits for it
      if (message.ask !== undefined) parentPort.postMessage({ asked: message.ask, answer: null, error: err.message })
    }
    return
  }
  const { id, task } = message
  let answer
  try {
    Atomics.store(progress, 0, 0)
    answer = { id, result: Array.isArray(task) ? parseAll(task) : parseTask(task) }
  } catch (err) {
    answer = { id, error: { message: err.message, stack: err.stack } }
  }
  // the batches' buffers and blocks go back for the pool's next ones (lib/parse/pool.js, SpareBuffers, SpareBlocks)
  answer.buffers = Array.isArray(task) ? buffersBack(task, 'batch') : []
  answer.blocks = Array.isArray(task) ? buffersBack(task, 'block') : []
  parentPort.postMessage(answer, [...answer.buffers, ...answer.blocks])
})
