/**
 * The backpressure run's verdicts (lib/experiments/result-contract.js): a table of small named
 * judgements, each reading the run and saying one thing as `{ verdict, text, ok }`.
 */
import { MiB, formatBytes, round } from '../../lib/util/units.js'
import { BATCH_BYTES } from './stages.js'

/** Past its bound a stream may hold one chunk or batch more: write() says "stop" only after it. */
const STAGE_SLACK = 2 * BATCH_BYTES
/** The two sides' rates agree when within this factor of each other. */
const RATE_MARGIN = 1.5
/** The aim the lab holds streaming to: less than this above idle (docs/limits.md). */
const STREAMING_AIM = 64 * MiB
/** In "ignore" mode the consumer grew when it held more than this many times its bound. */
const GREW_PAST = 4

/** The judgements of a run that kept to one mode, in the order the page lists them. */
const JUDGEMENTS = Object.freeze({
  ignore: Object.freeze([consumerGrowth, whatStopped]),
  pipeline: Object.freeze([streamsBounded, pauseTravelled, ratesCompared, serverMemory])
})

/**
 * @param {{ cell: object, stages: Array<{ name: string, bound: number|null, peak: number|null }>, samples: object[],
 *   modes: string[], kernelRead: boolean, seenEnd: boolean }} run the cell and stage figures of result.js
 * @returns {Array<{ verdict: string, text: string, ok: boolean|null }>}
 */
export function judgeRun (run) {
  if (!run.seenEnd) return [{ verdict: 'unseen', text: 'The server never showed the upload: nothing to judge.', ok: null }]
  if (run.modes.length > 1) {
    const text = `The switch flipped during the run (${run.cell.mode}): the charts show each part; no verdict on the whole.`
    return [{ verdict: 'switched', text, ok: null }]
  }
  return JUDGEMENTS[run.modes[0]].map(function judge (judgement) { return judgement(run) })
}

function consumerGrowth ({ stages }) {
  const { peak, bound } = stages.at(-1)
  const grew = peak > bound * GREW_PAST
  const text = `The consumer's buffer reached ${formatBytes(peak)}, ${round(peak / bound)} times its highWaterMark of ` +
    `${formatBytes(bound)}: nothing told the batcher to wait.`
  return { verdict: grew ? 'grew' : 'stayed', text, ok: grew }
}

function whatStopped ({ cell }) {
  if (cell.stoppedBy === 'cap') return stopped(`cap (${formatBytes(cell.cap)})`)
  if (cell.stoppedBy === 'budget') return stopped('lab\'s memory budget')
  const text = `Nothing stopped it before it ended (${cell.stoppedBy}): a larger body or a smaller cap shows the stop.`
  return { verdict: 'not stopped', text, ok: null }
}

function stopped (what) {
  return { verdict: 'stopped', text: `The ${what} stopped the upload; the lab answered and runs on.`, ok: true }
}

function streamsBounded ({ stages }) {
  const over = stages.filter(pastBound)
  if (over.length === 0) {
    const text = `Every stream stayed within its highWaterMark and one chunk: the consumer at most ${formatBytes(stages.at(-1).peak)}.`
    return { verdict: 'bounded', text, ok: true }
  }
  const named = over.map(function named (s) { return `${s.name} (${formatBytes(s.peak)})` }).join(', ')
  return { verdict: 'unbounded', text: `${named} passed the bound and one chunk.`, ok: false }
}

function pastBound (stage) {
  return stage.peak !== null && stage.bound !== null && stage.peak > stage.bound + STAGE_SLACK
}

function pauseTravelled ({ samples, kernelRead, cell }) {
  if (samples.length === 0) return { verdict: 'unsampled', text: 'The upload ended before the first sample: no queue was seen.', ok: null }
  if (!samples.some(backedUp)) {
    const text = 'The client never had to wait: the consumer kept up, so nothing pushed back.'
    return { verdict: 'did not reach the client', text, ok: false }
  }
  const where = kernelRead ? ` (the server's receive queue at most ${formatBytes(cell.kernelReceivePeakBytes)})` : ' in the kernels'
  const text = `The pause travelled back: bytes the client wrote waited${where} while the consumer worked.`
  return { verdict: 'reached the client', text, ok: true }
}

/**
 * The pause reached the client in a sample when its own buffer held bytes, or when the kernels held
 * more than the server's socket would take in one read: nobody was reading them.
 */
function backedUp (sample) {
  return (sample.client?.waitingBytes ?? 0) > 0 || (sample.read.unreadBytes ?? 0) > sample.stages[0].bound
}

function ratesCompared ({ cell }) {
  const { arrivedInflatedMBps: arrived, consumerMBps: took } = cell
  if (arrived === null || !took) return { verdict: 'rates unseen', text: 'The run was too short to compare the rates.', ok: null }
  const agree = arrived / took <= RATE_MARGIN && arrived / took >= 1 / RATE_MARGIN
  const text = `Over the second half the client's bytes reached the server at ${arrived} MB/s (inflated), the consumer took ${took} MB/s.`
  return { verdict: agree ? 'rates agree' : 'rates differ', text, ok: agree }
}

function serverMemory ({ cell }) {
  const memory = cell.server?.peakAboveIdle ?? null
  if (memory === null) return { verdict: 'grew', text: 'The server\'s RSS peaked at an unknown height above idle.', ok: null }
  const flat = memory < STREAMING_AIM
  return { verdict: flat ? 'flat' : 'grew', text: `The server's RSS peaked ${formatBytes(memory)} above idle.`, ok: flat }
}
