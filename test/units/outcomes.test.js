/**
 * lib/metrics/outcomes.js: what a page opened late is shown. The last crash record the bus carried, and
 * each experiment's latest finished result with the params its run started with; results kept
 * elsewhere (the supervisor's, from the workers before this one) come in through 'restore'
 * without pushing out anything newer, and what is kept stays bounded.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { LatestResults, createOutcomes } from '../../lib/metrics/outcomes.js'

/** Experiments the shelf keeps a result of: more than the registry holds. */
const RESULTS_KEPT = 16

/** The events of one finished run, as the experiment engine emits them. */
function finishedRun (id, name, time, result, params = { size: id }) {
  return [
    { id, name, phase: 'start', time: time - 10, params },
    { id, name, phase: 'progress', time: time - 5, done: 1, total: 2 },
    { id, name, phase: 'result', time, result }
  ]
}

describe('the latest results (lib/metrics/outcomes.js LatestResults)', function () {
  it('keeps each experiment\'s latest result with its run\'s params, newest first', function () {
    const shelf = new LatestResults()
    for (const event of [
      ...finishedRun('a1', 'ingest', 1000, { verdict: 'first' }),
      ...finishedRun('b1', 'zip-bomb', 2000, { verdict: 'bomb' }),
      ...finishedRun('a2', 'ingest', 3000, { verdict: 'second' })
    ]) shelf.note(event)
    assert.deepEqual(shelf.list(), [
      { id: 'a2', name: 'ingest', params: { size: 'a2' }, time: 3000, result: { verdict: 'second' } },
      { id: 'b1', name: 'zip-bomb', params: { size: 'b1' }, time: 2000, result: { verdict: 'bomb' } }
    ])
  })

  it('leaves the result before in place when a run fails or is cancelled', function () {
    const shelf = new LatestResults()
    for (const event of finishedRun('a1', 'ingest', 1000, { verdict: 'kept' })) shelf.note(event)
    shelf.note({ id: 'a2', name: 'ingest', phase: 'start', time: 2000, params: {} })
    shelf.note({ id: 'a2', name: 'ingest', phase: 'error', time: 2100, error: { type: 'worker.crashed' } })
    shelf.note({ id: 'a3', name: 'ingest', phase: 'start', time: 3000, params: {} })
    shelf.note({ id: 'a3', name: 'ingest', phase: 'cancelled', time: 3100 })
    assert.deepEqual(shelf.list().map(function id (e) { return e.id }), ['a1'])
  })

  it('gives a result whose start it never saw no params, and ignores what is not an experiment event', function () {
    const shelf = new LatestResults()
    shelf.note({ id: 'x', name: 'ingest', phase: 'result', time: 5, result: { ok: true } })
    for (const junk of [null, 'result', { phase: 'result' }, { id: 'y', name: 'ingest', phase: 'result', time: 6, result: 'text' }]) shelf.note(junk)
    assert.deepEqual(shelf.list(), [{ id: 'x', name: 'ingest', params: null, time: 5, result: { ok: true } }])
  })

  it('takes restored entries unless it holds a newer result of the same experiment, and skips malformed ones', function () {
    const shelf = new LatestResults()
    for (const event of finishedRun('new', 'ingest', 5000, { verdict: 'here' })) shelf.note(event)
    shelf.restore([
      { id: 'old', name: 'ingest', params: null, time: 4000, result: { verdict: 'there' } },
      { id: 'u1', name: 'upload', params: { files: 2 }, time: 3000, result: { verdict: 'upload' } },
      { id: 'bad', name: 'tiny-writes', time: 'yesterday', result: {} },
      { id: 'bad2', name: 'chunk-size', time: 1, result: null },
      null
    ])
    assert.deepEqual(shelf.list().map(function pair (e) { return [e.id, e.result.verdict] }), [['new', 'here'], ['u1', 'upload']])
    shelf.restore('not a list')
    assert.equal(shelf.list().length, 2)
  })

  it(`keeps at most ${RESULTS_KEPT} experiments, the least recently finished going first`, function () {
    const shelf = new LatestResults()
    for (let k = 0; k <= RESULTS_KEPT; k++) {
      for (const event of finishedRun(`r${k}`, `experiment-${k}`, 1000 + k, { k })) shelf.note(event)
    }
    const kept = shelf.list()
    assert.equal(kept.length, RESULTS_KEPT)
    assert.equal(kept[0].name, `experiment-${RESULTS_KEPT}`)
    assert.ok(!kept.some(function first (e) { return e.name === 'experiment-0' }))
  })
})

describe('the outcomes on the bus (lib/metrics/outcomes.js createOutcomes)', function () {
  it('keeps the last crash record and the latest results from the bus, restored ones included, and leaves the bus on close', function () {
    const bus = new EventEmitter()
    const outcomes = createOutcomes(bus)
    assert.equal(outcomes.crash, null)
    assert.deepEqual(outcomes.results, [])
    bus.emit('restore', { results: [{ id: 'before', name: 'upload', params: null, time: 10, result: { from: 'an earlier worker' } }] })
    const crash = { reason: 'memory-limit', pid: 41, route: 'bad', time: 20, restartMs: 300 }
    bus.emit('crash', crash)
    for (const event of finishedRun('now', 'ingest', 30, { from: 'this worker' })) bus.emit('experiment', event)
    assert.deepEqual(outcomes.crash, crash)
    assert.deepEqual(outcomes.results.map(function id (e) { return e.id }), ['now', 'before'])
    outcomes.close()
    for (const type of ['crash', 'experiment', 'restore']) assert.equal(bus.listenerCount(type), 0, type)
    bus.emit('crash', { reason: 'exit', time: 40 })
    assert.deepEqual(outcomes.crash, crash, 'nothing is kept once closed')
  })

  it('needs a bus', function () {
    assert.throws(function noBus () { createOutcomes(null) }, { name: 'TypeError', message: /events must be an EventEmitter/ })
  })
})
