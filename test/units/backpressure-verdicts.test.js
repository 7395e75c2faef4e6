/**
 * The backpressure run's verdicts (experiments/backpressure/verdicts.js) from hand-made figures,
 * without a run: which judgements each mode gets, and what each says. A real run's verdicts:
 * test/slow/backpressure.test.js.
 */
import assert from 'node:assert/strict'
import { judgeRun } from '../../experiments/backpressure/verdicts.js'

const KiB = 1024
const MiB = 1024 * KiB

function stage (name, bound, peak) {
  return { name, bound, peak }
}

function sample ({ waitingBytes = 0, unreadBytes = 0 } = {}) {
  return { client: { waitingBytes }, read: { unreadBytes }, stages: [{ bound: 64 * KiB }] }
}

function run (overrides = {}) {
  return {
    cell: { mode: 'pipeline', stoppedBy: 'end', cap: 128 * MiB, arrivedInflatedMBps: 10, consumerMBps: 9, kernelReceivePeakBytes: 4 * MiB,
      server: { peakAboveIdle: 8 * MiB } },
    stages: [stage('request', 64 * KiB, 96 * KiB), stage('consumer', 64 * KiB, 128 * KiB)],
    samples: [sample(), sample({ waitingBytes: 16 * KiB })],
    modes: ['pipeline'],
    kernelRead: true,
    seenEnd: true,
    ...overrides
  }
}

function named (verdicts) {
  return verdicts.map(function pair (v) { return [v.verdict, v.ok] })
}

describe('the backpressure verdicts', function () {
  it('judges an honoured run on its bounds, its pause, its rates and its memory', function () {
    assert.deepEqual(named(judgeRun(run())), [['bounded', true], ['reached the client', true], ['rates agree', true], ['flat', true]])
  })

  it('names each stream that passed its bound and one chunk', function () {
    const [bounds] = judgeRun(run({ stages: [stage('request', 64 * KiB, 10 * MiB), stage('consumer', 64 * KiB, 64 * KiB)] }))
    assert.deepEqual([bounds.verdict, bounds.ok, bounds.text], ['unbounded', false, 'request (10.0 MiB) passed the bound and one chunk.'])
  })

  it('says the pause did not reach a client that never waited, and nothing of a run with no sample', function () {
    assert.deepEqual(named(judgeRun(run({ samples: [sample()] }))).at(1), ['did not reach the client', false])
    assert.deepEqual(named(judgeRun(run({ samples: [] }))).at(1), ['unsampled', null])
  })

  it('counts kernels holding more than one read of the socket as the pause reaching the client', function () {
    assert.deepEqual(named(judgeRun(run({ samples: [sample({ unreadBytes: 65 * KiB })] }))).at(1), ['reached the client', true])
  })

  it('holds rates apart by more than half of either to differ, and leaves a short run\'s unjudged', function () {
    const slow = run().cell
    assert.deepEqual(named(judgeRun(run({ cell: { ...slow, consumerMBps: 5 } }))).at(2), ['rates differ', false])
    assert.deepEqual(named(judgeRun(run({ cell: { ...slow, consumerMBps: null } }))).at(2), ['rates unseen', null])
  })

  it('calls 64 MiB above idle or more growth, and an unknown peak unjudged', function () {
    const cell = run().cell
    assert.deepEqual(named(judgeRun(run({ cell: { ...cell, server: { peakAboveIdle: 64 * MiB } } }))).at(3), ['grew', false])
    assert.deepEqual(named(judgeRun(run({ cell: { ...cell, server: null } }))).at(3), ['grew', null])
  })

  it('judges an ignoring run on its consumer\'s growth and what stopped it', function () {
    const ignoring = run({ modes: ['ignore'], cell: { ...run().cell, stoppedBy: 'cap' }, stages: [stage('consumer', 64 * KiB, 128 * MiB)] })
    const verdicts = judgeRun(ignoring)
    assert.deepEqual(named(verdicts), [['grew', true], ['stopped', true]])
    assert.match(verdicts[0].text, /reached 128\.0 MiB, 2048 times its highWaterMark of 64\.0 KiB/)
    assert.match(verdicts[1].text, /^The cap \(128\.0 MiB\) stopped the upload/)
  })

  it('says nothing stopped an ignoring run that ended, and names the budget when it stopped one', function () {
    const ended = run({ modes: ['ignore'], stages: [stage('consumer', 64 * KiB, 200 * KiB)] })
    assert.deepEqual(named(judgeRun(ended)), [['stayed', false], ['not stopped', null]])
    const budget = judgeRun({ ...ended, cell: { ...ended.cell, stoppedBy: 'budget' } })[1]
    assert.match(budget.text, /^The lab's memory budget stopped the upload/)
  })

  it('gives one verdict and no judgement to a run the server never showed, or one whose mode switched', function () {
    assert.deepEqual(named(judgeRun(run({ seenEnd: false }))), [['unseen', null]])
    assert.deepEqual(named(judgeRun(run({ modes: ['pipeline', 'ignore'] }))), [['switched', null]])
  })
})
