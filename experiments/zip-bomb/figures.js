/** The zip-bomb experiment's lesson screenshot and classroom demo step, from the run's own result (experiments/README.md#figures). */
import { formatBytes, formatDecimalBytes, formatDuration, formatMiB, formatMs } from '../../lib/util/units.js'
import { count, peakOf } from '../../lib/measure/figure-lines.js'
import { bombInWords } from './result.js'

export const screenshot = Object.freeze({
  name: 'zip-bomb',
  flags: [],
  // guarded /bad pays its whole inflate limit and answers 413: the run ends with both routes' figures
  params: { variant: 'ratio', route: 'both', bytes: '10GB' },
  timeoutMs: 5 * 60_000,
  figures: zipBombFigures
})

function zipBombFigures ({ result }) {
  const b = result.bomb
  const guard = result.unsafeBad ? 'unguarded (--unsafe-bad)' : `guarded at ${formatBytes(result.limits.inflated)} inflated`
  const lines = [`bomb: ${b.variant}, ${bombInWords(b)} (${count(b.ratio)}:1); /bad ${guard}`]
  for (const r of Object.values(result.routes)) {
    const reached = r.inflatedBytesReached === null ? 'not reported' : formatDecimalBytes(r.inflatedBytesReached)
    lines.push(`/${r.route}: ${r.status} ${r.errorType ?? ''} (${r.outcome}) in ${formatMs(r.ms)}; inflated bytes reached ${reached}; ` +
      `server peak above idle ${formatMiB(r.server?.peakAboveIdle)} (peak RSS ${formatMiB(r.server?.peakRss)})`)
  }
  return lines
}

/** The demo's step: the bomb into /good, then into an unguarded /bad (--unsafe-bad) whose worker is killed: that run is lost. */
export const demo = Object.freeze({
  title: 'The zip bomb',
  plans: Object.freeze({
    // the lab's default bomb (lib/generate/bombs.js)
    full: Object.freeze({ variant: 'ratio' }),
    quick: Object.freeze({ variant: 'ratio' })
  }),
  intro: function demoIntro (params, lab) {
    return [
      'A zip bomb: a few MB of gzip that inflate to gigabytes of valid JSON.',
      `The lab runs under a ${lab.budget} memory budget, as in a container: past it, the supervisor kills the worker.`,
      'Today /bad has no inflate limit at all (--unsafe-bad). /good goes first, then /bad.'
    ]
  },
  question: function demoQuestion () { return 'what will each route do with it? Will the lab survive?' },
  prompt: 'send the bomb',
  runs: function demoRuns (params) {
    return [
      { params: { ...params, route: 'good' }, report: goodReport },
      { params: { ...params, route: 'bad' }, report: badReport, mayBeLost: true }
    ]
  },
  progress: function demoProgress (state) {
    const p = state.progress ?? {}
    if (!p.route) return 'warming up'
    if (p.done > 0) return `/${p.route} has answered`
    return `the bomb is going into /${p.route}${p.stage?.includes('unsafe') ? ' (no inflate limit: watch RSS)' : ''}`
  }
})

function goodReport (state) {
  const bomb = state.result.bomb
  const g = state.result.routes.good
  const refused = g.status === 200 ? 'ACCEPTED it (200)' : `refused it: ${g.status} ${g.errorType}`
  return {
    lines: [
      `The bomb: ${bombInWords(bomb)} (${bomb.ratio}:1).`,
      `/good ${refused} after ${formatDecimalBytes(g.inflatedBytesReached)} inflated, in ${formatDuration(g.ms)}; ` +
        `server peak ${peakOf(g.server).text} above idle.`
    ],
    figures: [`Zip bomb (${formatDecimalBytes(bomb.inflatedBytes)} in ${formatDecimalBytes(bomb.compressedBytes)}): ` +
      `/good ${refused} after ${formatDecimalBytes(g.inflatedBytesReached)}, ${formatDuration(g.ms)}, ${peakOf(g.server).text}.`]
  }
}

async function badReport (state, kit) {
  if (state.status === 'done') {
    const b = state.result.routes.bad
    return {
      lines: [`/bad answered ${b.status} ${b.errorType ?? ''} in ${formatDuration(b.ms)}; ` +
        `server peak ${peakOf(b.server).text} above idle.`],
      figures: [`Zip bomb: /bad answered ${b.status} ${b.errorType ?? ''} (not killed), ${peakOf(b.server).text}.`]
    }
  }
  if (state.error?.type !== 'worker.crashed') throw kit.failed(state)
  const restart = await kit.restart()
  const killed = state.error.reason === 'memory-limit'
    ? `passed its ${formatMiB(state.error.budget)} budget (RSS ${formatMiB(state.error.rss)}) and was killed`
    : `died (${state.error.reason})`
  const fate = state.error.reason === 'memory-limit'
    ? `was killed at ${formatMiB(state.error.rss)} (budget ${formatMiB(state.error.budget)})`
    : `died (${state.error.reason})`
  return {
    lines: [
      `/bad: the worker ${kit.warn(killed)}, ${formatDuration(state.endedAt - state.startedAt)} into the run.`,
      `The lab restarted it${restart ? ` in ${restart.ms} ms (worker pid ${restart.oldPid} → ${restart.newPid})` : ''}; ` +
        'the port never closed. The dashboard shows a crash banner.'
    ],
    figures: [`Zip bomb: /bad's worker ${fate}${restart ? ` and back in ${restart.ms} ms` : ''}.`]
  }
}
