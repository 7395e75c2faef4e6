/**
 * `npm run bench -- ingest`: one generated body POSTed to every ingest route, sizes x concurrency x routes, each
 * measurement on a fresh server; /good's speed is judged against the fastest other route by SPEED_TARGETS.
 */
import { MiB, parseByteSize } from '../../lib/util/units.js'
import { defaultMemoryBudget } from '../../lib/limits/memory-budget.js'
import { COUNTED_MAX, COUNTED_MIN, COUNTED_OFFER, runIngestBench } from './bench-runner.js'
import { markdownTable, mib, fixed } from '../../lib/measure/table.js'
import { list, positiveInteger } from '../../lib/measure/args.js'
import { INGEST_ROUTES, INGEST_ROUTE_NAMES, routesRefusing } from '../../lib/ingest/contenders.js'
import { schemaChoices, schemaDefault } from '../../lib/experiments/schema-options.js'
import { boundFraction, readBoundFile } from '../../lib/measure/bound.js'
import { cpuShare, spread } from '../../lib/measure/cpu.js'
import * as experiment from './index.js'

export const name = 'ingest'
export const summary = 'POST the same generated body to /bad, /good, /express-json and /streamparser-json: speed, latency, memory'

const NO_NDJSON = routesRefusing(INGEST_ROUTE_NAMES, 'ndjson')

/** What every flag is when not given; --quick changes some of them (QUICK). */
const DEFAULTS = Object.freeze({
  sizes: '1KB,64KB,1MB,10MB,100MB,500MB',
  concurrency: '1,10,100',
  routes: INGEST_ROUTE_NAMES.join(','),
  format: schemaDefault(experiment.params, 'format'),
  repeat: '1',
  duration: '10',
  'timed-up-to': '1MB'
})

/** A run the spec can afford: small bodies, short time boxes, one upload per connection. */
const QUICK = Object.freeze({ sizes: '1KB,64KB,1MB', concurrency: '1,10', duration: '1' })

/** /good's req/s over the fastest other route run in the cell, from an inflated body size on. */
const SPEED_TARGETS = Object.freeze([
  Object.freeze({ from: 100e6, ratio: 1.5 }),
  Object.freeze({ from: 10e6, ratio: 1.2 }),
  Object.freeze({ from: 0, ratio: 1.0 })
])

function speedTarget (bytes) {
  return SPEED_TARGETS.find(function applies (t) { return bytes >= t.from }).ratio
}

export const usage = `Options (ingest):
  --sizes LIST        inflated sizes (default ${DEFAULTS.sizes})
  --concurrency LIST  connections, uploads in flight (default ${DEFAULTS.concurrency})
  --routes LIST       of ${INGEST_ROUTE_NAMES.join(', ')} (default all ${INGEST_ROUTE_NAMES.length};
                      ${NO_NDJSON.map(function slash (r) { return `/${r}` }).join(' and ')} read no NDJSON)
  --duration S        seconds each time-boxed cell runs (default ${DEFAULTS.duration})
  --timed-up-to SIZE  bodies up to this size are time-boxed: autocannon keeps every connection
                      sending the body; larger ones get a fixed count of uploads (default ${DEFAULTS['timed-up-to']})
  --requests N        uploads per counted cell (default: the concurrency, and at least enough to offer
                      ${COUNTED_OFFER / 1e6} MB inflated, ${COUNTED_MIN} to ${COUNTED_MAX} uploads: 10MB 20, 100MB and 500MB 2 at x1)
  --memory-limit SZ   the servers' memory budget (default the lab's: a quarter of this machine's memory,
                      at least 1 GiB); what does not fit is refused (413/503) and counted. 0: none
  --quick             a run in seconds: --sizes ${QUICK.sizes} --concurrency ${QUICK.concurrency} --duration ${QUICK.duration},
                      one upload per connection in counted cells (flags given win)
  --format F          json | array | ndjson (default json)
  --repeat N          measurements per cell, fresh server each; medians reported (default ${DEFAULTS.repeat})
  --url URL           measure a running server instead (no peak figures then)
  --server-flag FLAG  extra flag for the server processes (repeatable)
  --bound FILE        a figures file of the bound bench (npm run bench -- bound --figures NAME): each
                      route's MB/s as a share of that bound; without it, the bound is measured quickly
                      on each size's body before its labs start
  Per cell: req/s and MB/s of 200 answers, their p99 latency, the server's peak RSS above idle, refusals;
  per size and concurrency: /good's req/s over the fastest other route, against the speed target
  (${SPEED_TARGETS.toReversed().map(function shown (t) { return `${t.ratio}x from ${t.from / 1e6} MB` }).join(', ')}).`

export const options = Object.freeze({
  sizes: { type: 'string' },
  concurrency: { type: 'string' },
  requests: { type: 'string' },
  routes: { type: 'string' },
  duration: { type: 'string' },
  'timed-up-to': { type: 'string' },
  'memory-limit': { type: 'string' },
  quick: { type: 'boolean', default: false },
  format: { type: 'string' },
  repeat: { type: 'string' },
  url: { type: 'string' },
  'server-flag': { type: 'string', multiple: true, default: [] },
  bound: { type: 'string' }
})

export function normalize (given) {
  const values = { ...DEFAULTS, ...(given.quick ? QUICK : {}) }
  for (const [key, value] of Object.entries(given)) if (value !== undefined) values[key] = value
  const routes = list(values.routes, function route (r) {
    if (!Object.hasOwn(INGEST_ROUTES, r)) throw new TypeError(`--routes takes ${INGEST_ROUTE_NAMES.join(', ')}, got "${r}"`)
    return r
  })
  const formats = schemaChoices(experiment.params, 'format')
  if (!formats.includes(values.format)) throw new TypeError(`--format takes ${formats.join(', ')}, got "${values.format}"`)
  const refusing = routesRefusing(routes, values.format)
  const reads = INGEST_ROUTES[refusing[0]]?.formats.join(' or ')
  if (refusing.length > 0) throw new TypeError(`--format ${values.format}: /${refusing.join(', /')} reads only ${reads}`)
  const durationS = Number(values.duration)
  if (!(durationS > 0 && durationS <= 3600)) throw new TypeError(`--duration takes seconds from 0 to 3600, got "${values.duration}"`)
  const memoryLimit = values['memory-limit'] === undefined ? defaultMemoryBudget() : parseByteSize(values['memory-limit'])
  const requests = values.requests === undefined ? null : positiveInteger('requests')(values.requests)
  const concurrency = list(values.concurrency, positiveInteger('concurrency'))
  let bound = null
  if (values.bound !== undefined) {
    try {
      bound = { ...readBoundFile(values.bound), source: 'file' }
    } catch (err) {
      throw new TypeError(`--bound ${err.message}`, { cause: err })
    }
  }
  return {
    sizes: list(values.sizes, parseByteSize),
    sizeLabels: list(values.sizes, String),
    concurrency,
    requests,
    routes,
    format: values.format,
    repeat: positiveInteger('repeat')(values.repeat),
    durationS,
    timedUpTo: parseByteSize(values['timed-up-to']),
    memoryLimit,
    quick: Boolean(given.quick),
    url: values.url ?? null,
    serverFlags: values['server-flag'],
    bound
  }
}

export async function run (opts, report) {
  return ingestReport(await runIngestBench(opts, report))
}

/** The report of an ingest run from its cells: tables, charts, and data with /good's verdicts against the targets. */
export function ingestReport (cells) {
  const verdicts = speedVerdicts(cells)
  return {
    title: 'Buffered vs streamed ingest',
    markdown: ingestTable(cells, verdicts),
    charts: ingestCharts(cells, verdicts),
    data: { cells, verdicts, targets: SPEED_TARGETS }
  }
}

function sameCell (a, b) {
  return a.bytes === b.bytes && a.concurrency === b.concurrency
}

/** For each size and concurrency /good and another route ran: /good's req/s over the fastest other's (`other`), and the verdict. */
function speedVerdicts (cells) {
  const out = []
  for (const good of cells.filter(function isGood (c) { return c.route === 'good' })) {
    const others = cells.filter(function rival (c) { return c.route !== 'good' && sameCell(c, good) })
    if (others.length === 0) continue
    const best = others.reduce(function faster (a, b) { return b.reqPerSecond > a.reqPerSecond ? b : a })
    const target = speedTarget(good.bytes)
    let ratio = null
    if (best.reqPerSecond > 0) ratio = good.reqPerSecond / best.reqPerSecond
    else if (good.reqPerSecond > 0) ratio = Infinity
    let verdict = 'n/a'
    if (ratio !== null) verdict = ratio >= target ? 'meets' : ratio >= 1 ? 'short' : 'loses'
    const rivals = others.map(function route (c) { return c.route })
    const { size, bytes, concurrency } = good
    const other = { other: best.route, rivals, otherReqPerSecond: best.reqPerSecond }
    out.push({ size, bytes, concurrency, good: good.reqPerSecond, ...other, ratio, target, verdict })
  }
  return out
}

const VERDICT_TEXT = Object.freeze({
  meets: 'meets',
  short: 'faster, short of target',
  loses: '**/good LOSES**',
  'n/a': 'n/a (no route answered)'
})

function ratioText (ratio) {
  if (ratio === null) return 'n/a'
  return ratio === Infinity ? 'only /good answered' : `${fixed(ratio, 2)}x`
}

function refusedText (c) {
  const attempted = c.requests
  if (c.refused === 0 && c.failed === 0) return '0'
  const parts = []
  if (c.refused > 0) parts.push(`refused ${c.refused} of ${attempted}`)
  if (c.failed > 0) parts.push(`failed ${c.failed} of ${attempted}`)
  return parts.join(', ')
}

/** A cell's MB/s as a share of the machine's bound (lib/measure/bound.js). */
function ofBoundText (c) {
  const fraction = boundFraction(c.mbPerSecond, c.bound?.mbPerSecond ?? null)
  return fraction === null ? 'n/a' : `${fixed(100 * fraction, 0)}%`
}

/** A cell's CPU seconds per GB, and the stages' CPU per GB over it (lib/measure/cpu.js). */
function cpuTexts (c) {
  const share = cpuShare(c.cpuPerGB ?? null, c.bound?.cpuPerGB ?? null)
  return [typeof c.cpuPerGB === 'number' ? fixed(c.cpuPerGB, 2) : 'n/a', share === null ? 'n/a' : `${fixed(100 * share, 0)}%`]
}

/** Where each size's bound came from: a bound bench's figures file, or measured at the start. */
function boundNote (cells) {
  const bounds = [...new Map(cells.filter(function hasBound (c) { return c.bound })
    .map(function bound (c) { return [c.size, c.bound] })).entries()]
  if (bounds.length === 0) return []
  const given = bounds[0][1]
  if (given.source === 'file') {
    const body = given.body ? `, measured on ${fixed(given.body.bytes / 1e6)} MB of ${given.body.format}` : ''
    const bound = `${fixed(given.mbPerSecond)} MB/s on ${given.cores} cores${body}`
    return [`- of bound (wall): MB/s over the machine's bound, ${bound}, from ${given.file} (npm run bench -- bound)`, cpuNote(bounds)]
  }
  const each = bounds.map(function shown ([size, b]) { return `${size} ${fixed(b.mbPerSecond)}` }).join(', ')
  return [`- of bound (wall): MB/s over the machine's bound on ${given.cores} cores, measured quickly at the start on each size's body ` +
    `(MB/s: ${each}); npm run bench -- bound measures it with care`, cpuNote(bounds)]
}

function reqPerSecondText (n) {
  return fixed(n, n < 10 ? 2 : 0)
}

function cpuNote (bounds) {
  const each = bounds.map(function shown ([size, b]) {
    return `${size} ${typeof b.cpuPerGB === 'number' ? fixed(b.cpuPerGB, 2) : 'n/a'}`
  }).join(', ')
  return '- CPU s/GB: the lab worker\'s CPU seconds (every thread, /proc/<pid>/stat) over the load, per GB of inflated body answered; ' +
    `of stages' CPU: the stages' own CPU s/GB, measured with the bound, over it (${each})`
}

/** How far apart each cell's runs are on CPU s/GB: the widest, and the cells past 10 %. */
function cpuSpreadNote (cells) {
  const spreads = cells.map(function cellSpread (c) {
    return { c, spread: spread((c.measurements ?? []).map(function cpu (r) { return r.cpuPerGB })) }
  }).filter(function known (x) { return x.spread !== null })
  if (spreads.length === 0) return []
  const widest = spreads.reduce(function wider (a, b) { return b.spread > a.spread ? b : a })
  const past = spreads.filter(function far (x) { return x.spread > 0.1 })
  function where (x) { return `${x.c.size} x${x.c.concurrency} /${x.c.route}` }
  return [`- CPU s/GB across each cell's runs: at most ${fixed(100 * widest.spread, 0)}% apart (${where(widest)})` +
    (past.length ? `; more than 10% at ${past.map(where).join(', ')}` : '; every cell within 10%')]
}

function loadText (c) {
  return c.mode === 'timed' ? `${c.durationS} s` : `${c.requests / c.runs} up.`
}

/** The tables of an ingest run: every cell, then /good's speed against the target. */
function ingestTable (cells, verdicts = speedVerdicts(cells)) {
  const rows = cells.map(function row (c) {
    const v = c.route === 'good' ? verdicts.find(function mine (x) { return sameCell(x, c) }) : null
    return [c.size, c.concurrency, c.route, loadText(c), reqPerSecondText(c.reqPerSecond), fixed(c.mbPerSecond),
      ofBoundText(c), ...cpuTexts(c), fixed(c.latencyP99Ms, 0), mib(c.peakAboveIdle), `${c.ok}/${c.requests}`, refusedText(c),
      v ? ratioText(v.ratio) : '', v ? VERDICT_TEXT[v.verdict] : '']
  })
  const heads = ['size', 'conc', 'route', 'load', 'req/s', 'MB/s', 'of bound (wall)', 'CPU s/GB', 'of stages\' CPU', 'p99 ms',
    'peak above idle MiB', '200s', 'refused']
  const table = markdownTable([...heads, '/good vs best', 'verdict'], rows)
  const verdictRows = verdicts.map(function row (v) {
    return [v.size, v.concurrency, reqPerSecondText(v.good), `/${v.other}`, reqPerSecondText(v.otherReqPerSecond),
      ratioText(v.ratio), `${v.target}x`, VERDICT_TEXT[v.verdict]]
  })
  const verdictTable = verdictRows.length
    ? '\n\n' + markdownTable(['size', 'conc', '/good req/s', 'best other', 'its req/s', 'ratio', 'target', 'verdict'], verdictRows)
    : ''
  return `${table}${verdictTable}\n\n${ingestNotes(cells, verdicts).join('\n')}\n`
}

function ingestNotes (cells, verdicts) {
  const notes = []
  const losing = verdicts.filter(function loses (v) { return v.verdict === 'loses' })
  const short = verdicts.filter(function isShort (v) { return v.verdict === 'short' })
  function where (list) {
    return list.map(function at (v) { return `${v.size} x${v.concurrency} (${ratioText(v.ratio)} of /${v.other})` }).join(', ')
  }
  if (verdicts.length) {
    const meets = verdicts.filter(function ok (v) { return v.verdict === 'meets' }).length
    notes.push(`- /good meets its target in ${meets} of ${verdicts.length} cells.` +
      (losing.length ? ` It LOSES at ${where(losing)}.` : ' It loses nowhere.') +
      (short.length ? ` Faster but short of the target at ${where(short)}.` : ''))
  }
  const keys = [...new Set(cells.map(function key (c) { return `${c.bytes} ${c.concurrency}` }))]
  const differing = keys.filter(function differs (key) {
    const group = cells.filter(function inGroup (c) { return `${c.bytes} ${c.concurrency}` === key && c.summary })
    const answers = new Set(group.map(function answer (c) { return JSON.stringify(c.summary) }))
    return answers.size > 1 || group.some(function disagrees (c) { return !c.summariesAgree })
  })
  const routes = [...new Set(cells.map(function route (c) { return c.route }))]
  const from = routes.map(function slash (r) { return '/' + r }).join(', ')
  notes.push(differing.length === 0
    ? `- answers identical: every 200 answer checked, from ${from}, gave the same summary for the same body`
    : `- answers DIFFER at ${differing.join('; ')} (bytes, concurrency)`)
  const refused = cells.filter(function hasRefusals (c) { return c.refused > 0 || c.failed > 0 })
  for (const c of refused) {
    const types = {}
    for (const errs of c.errors) for (const [type, n] of Object.entries(errs)) types[type] = (types[type] ?? 0) + n
    const shown = Object.entries(types).map(function shown ([t, n]) { return `${n} ${t}` }).join(', ')
    notes.push(`- ${c.size} x${c.concurrency} /${c.route}: ${refusedText(c)} (${shown})`)
  }
  for (const c of cells.filter(function restarted (c) { return c.workerRestarts > 0 })) {
    const restarts = `the worker was killed and restarted in ${c.workerRestarts} run(s)`
    notes.push(`- ${c.size} x${c.concurrency} /${c.route}: ${restarts}; no peak figure from those`)
  }
  const loads = cells.map(function load (c) { return c.loadAverage }).filter(function present (l) { return typeof l === 'number' })
  if (loads.length) {
    const range = `${fixed(Math.min(...loads), 2)} to ${fixed(Math.max(...loads), 2)}`
    notes.push(`- the machine's 1-minute load average at the start of each measurement: ${range}`)
  }
  const timed = cells.find(function isTimed (c) { return c.mode === 'timed' })
  const counted = cells.find(function isCounted (c) { return c.mode === 'counted' })
  if (timed || counted) {
    notes.push('- load: ' + [timed && `"${timed.durationS} s": autocannon, every connection sending the body for that long`,
      counted && '"N up.": N uploads streamed from disk, the concurrency in flight'].filter(Boolean).join('; ') +
      '. req/s, MB/s (inflated) and p99 are of the 200 answers; refusals are 413/503 from the memory budget or /good\'s queue')
  }
  notes.push(...boundNote(cells), ...cpuSpreadNote(cells))
  return notes
}

/** The charts of an ingest run: memory and latency against concurrency, speed and /good's ratio against size. */
function ingestCharts (cells, verdicts = speedVerdicts(cells)) {
  const routes = [...new Set(cells.map(function route (c) { return c.route }))]
  const sizes = [...new Set(cells.map(function size (c) { return c.size }))]
  const concurrencies = [...new Set(cells.map(function conc (c) { return c.concurrency }))]
  function series (x, y, groupBySize) {
    const out = []
    for (const route of routes) {
      for (const size of groupBySize ? sizes : [null]) {
        const points = cells
          .filter(function inGroup (c) {
            return c.route === route && (size === null || c.size === size) && (groupBySize || c.concurrency === concurrencies[0])
          })
          .map(function point (c) { return { x: x(c), y: y(c) } })
          .sort(function byX (a, b) { return a.x - b.x })
        if (points.length) out.push({ label: groupBySize && sizes.length > 1 ? `/${route} ${size}` : `/${route}`, points })
      }
    }
    return out
  }
  function toMiB (bytes) { return bytes === null ? null : bytes / MiB }
  function conc (c) { return c.concurrency }
  function peakMiB (c) { return toMiB(c.peakAboveIdle) }
  function p99 (c) { return c.latencyP99Ms }
  const charts = [
    { title: 'Server peak RSS above idle vs concurrency', x: 'concurrent uploads', y: 'MiB', series: series(conc, peakMiB, true) },
    { title: 'p99 latency vs concurrency', x: 'concurrent uploads', y: 'ms', series: series(conc, p99, true) },
    {
      title: `Throughput vs body size (concurrency ${concurrencies[0]})`,
      x: 'inflated MB',
      y: 'MB/s',
      logX: true,
      series: series(function mb (c) { return c.bytes / 1e6 }, function speed (c) { return c.mbPerSecond }, false)
    }
  ]
  if (verdicts.length) charts.push(speedRatioChart(verdicts))
  return charts
}

/** /good's req/s over the fastest rival (named in the title) by body size, a line per concurrency, the target dashed. */
function speedRatioChart (verdicts) {
  const concurrencies = [...new Set(verdicts.map(function conc (v) { return v.concurrency }))]
  const byX = function byX (a, b) { return a.x - b.x }
  const series = concurrencies.map(function line (conc) {
    return {
      label: `${conc} concurrent`,
      points: verdicts
        .filter(function mine (v) { return v.concurrency === conc && Number.isFinite(v.ratio) })
        .map(function point (v) { return { x: v.bytes / 1e6, y: v.ratio } })
        .sort(byX)
    }
  })
  const sizes = [...new Map(verdicts.map(function size (v) { return [v.bytes, v] })).values()]
    .sort(function bySize (a, b) { return a.bytes - b.bytes })
  // a step, not a slope: each target holds from its size on
  const target = []
  for (const v of sizes) {
    const previous = target[target.length - 1]
    if (previous && previous.y !== v.target) target.push({ x: v.bytes / 1e6, y: previous.y })
    target.push({ x: v.bytes / 1e6, y: v.target })
  }
  series.push({ label: 'target', dashed: true, points: target })
  const rivals = [...new Set(verdicts.flatMap(function rivalsOf (v) { return v.rivals ?? [v.other] }))]
    .filter(function named (r) { return typeof r === 'string' })
    .map(function slash (r) { return `/${r}` })
  let against = 'the fastest other route'
  const fastest = rivals.length === 2 ? 'faster' : 'fastest'
  if (rivals.length === 1) against = rivals[0]
  else if (rivals.length > 1) against = `the ${fastest} of ${rivals.slice(0, -1).join(', ')} and ${rivals.at(-1)}`
  return {
    title: `/good's speed vs ${against}`,
    file: 'speed-ratio',
    x: 'inflated body size',
    y: '/good req/s ÷ best other',
    logX: true,
    xTicks: sizes.map(function tick (v) { return { x: v.bytes / 1e6, label: v.size } }),
    series
  }
}
