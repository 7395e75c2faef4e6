/** The hostile bench's result: each row judged (held, BROKEN with reasons, or skipped), the table, the notes, the chart. */
import { MiB, formatBytes, formatDuration } from '../../lib/util/units.js'
import { markdownTable, mib } from '../../lib/measure/table.js'

const TABLE_HEADER = Object.freeze([
  'attack', 'worker kills', 'worker peak growth MiB', 'normal /good answer (ms or status)', 'left in flight', 'bytes on disk', 'verdict'
])

/** Whether the normal request was answered: 200, or a 503 carrying one of the lab's JSON errors. */
function probeAnswered (probe) {
  return probe?.status === 200 || (probe?.status === 503 && typeof probe.errorType === 'string')
}

/** Judge one measured row; `growthBound`: bytes the worker may grow by on attacks to the streaming routes. */
export function judge (row, growthBound) {
  if (row.skipped) {
    return { kills: null, growth: null, probe: null, inFlight: null, diskAdded: null, verdict: `skipped: ${row.skipped}`, reasons: [] }
  }
  const reasons = []
  const growth = Number.isFinite(row.peakRss) && Number.isFinite(row.idleRss) ? Math.max(0, row.peakRss - row.idleRss) : null
  if (row.error) reasons.push(`not measured: ${row.error.split('\n')[0]}`)
  if (row.kills > 0) reasons.push(`${row.kills} worker kill${row.kills === 1 ? '' : 's'}`)
  if (row.labAlive === false) reasons.push(row.gaveUp ? 'the supervisor gave up' : 'the lab exited')
  if (row.inFlight) {
    const left = row.inFlight.requestsInFlight
    if (left === null) reasons.push(`requests in flight unknown (GET /metrics: ${row.inFlight.error})`)
    else if (left > 0) reasons.push(`${left} left in flight after ${formatDuration(row.inFlight.waitedMs)}`)
  }
  if (row.probe && !probeAnswered(row.probe)) reasons.push(`normal /good not answered (${row.probe.label})`)
  if (row.judged && growth !== null && growth > growthBound) {
    reasons.push(`the worker grew ${mib(growth)} MiB on ${row.target}, past ${mib(growthBound)}`)
  }
  if (row.judged && growth === null && !row.error) reasons.push('growth not measured')
  if (row.attackError) reasons.push(`the bench's attack failed: ${row.attackError.split('\n')[0]}`)
  // what the attack's own clients got that the lab promises (an answer, the right summary)
  if (Array.isArray(row.details?.broken)) reasons.push(...row.details.broken)
  return {
    kills: row.kills ?? null,
    growth,
    probe: row.probe ?? null,
    inFlight: row.inFlight ?? null,
    diskAdded: row.diskAdded ?? null,
    verdict: reasons.length === 0 ? 'held' : `BROKEN: ${reasons.join('; ')}`,
    reasons
  }
}

function probeCell (probe) {
  if (!probe) return 'n/a'
  if (probe.status > 0) return `${probe.status}${probe.errorType ? ` ${probe.errorType}` : ''} in ${probe.ms} ms`
  return `${probe.label} (${probe.ms} ms)`
}

/** The table, in Markdown: one row per attack. */
export function hostileTable (rows) {
  return markdownTable([...TABLE_HEADER], rows.map(function cells (row) {
    return [
      `${row.group}. ${row.label}`,
      row.kills ?? 'n/a',
      row.growth === null ? 'n/a' : `${mib(row.growth)}${row.judged ? '' : ' (not judged)'}`,
      probeCell(row.probe),
      row.inFlight?.requestsInFlight ?? 'n/a',
      row.diskAdded === null ? 'n/a' : formatBytes(row.diskAdded),
      row.verdict
    ]
  }))
}

/** How each figure was measured, and what each attack's own requests got, in Markdown. */
export function hostileNotes ({ rows, dataDir, ownDataDirs }, opts, sampleMs) {
  const flags = opts.serverFlags.length > 0 ? ` plus \`${opts.serverFlags.join(' ')}\`` : ' and nothing else'
  const budgets = [...new Set(rows.map(function budget (r) { return r.memoryBudget }).filter(Boolean))]
  const held = rows.filter(function isHeld (r) { return r.verdict === 'held' }).length
  const skipped = rows.filter(function isSkipped (r) { return r.skipped }).length
  const skips = skipped > 0 ? ` (${skipped} skipped: the route does not read the body)` : ''
  const lines = [
    `${held} of ${rows.length - skipped} attacks held${skips}${opts.quick ? ' (--quick sizes)' : ''}.`,
    '',
    `Each attack ran on a fresh lab: \`node server.js --port 0 --host 127.0.0.1\`${flags} ` +
      `(as the supervisor announced it: ${budgets.join(', ') || 'budget not announced'}); data directory: ${dataDir}.`,
    '',
    '- worker kills: workers the supervisor reported dead ("worker N killed: ...", "died of", "exited with") or replaced ' +
      '("worker pid N"), from the attack\'s start until it settled.',
    '- worker peak growth: the worker\'s highest RSS while the attack ran, read by the bench from /proc/<worker pid>/status ' +
      `every ${sampleMs} ms (VmRSS, and VmHWM reset at the start), minus its idle VmRSS after one warm-up request. ` +
      `The ${mib(opts.growthBound)} MiB bound is judged only on attacks to the streaming routes (/good, /streamparser-json); ` +
      'elsewhere it is shown "(not judged)".',
    `- normal /good answer: ${opts.probeItems} generated items, gzipped, timed from the bench during the attack ` +
      `(after it, for abandoned uploads); client timeout ${opts.probeTimeoutMs / 1000} s. ` +
      'A 200, or a 503 with the lab\'s JSON error, counts as answered.',
    '- left in flight: `requestsInFlight` of GET /metrics (Accept: application/json) once the attack\'s clients were destroyed, ' +
      `polled for up to ${opts.settleMs / 1000} s until 0.`,
    '- bytes on disk: what the attack added to the data directory (file sizes), weighed before the lab stopped' +
      `${ownDataDirs ? '' : '; the bench then removed what the lab added'}.`,
    '',
    'What the attacks\' own requests got:',
    '',
    ...rows.map(function attackLine (row) {
      const notRun = row.skipped ?? row.error?.split('\n')[0]
      const said = row.details?.summary ?? (notRun ? `not run: ${notRun}` : 'no summary')
      const overran = row.timedOut ? ` (stopped at the ${opts.attackTimeoutMs / 1000} s attack limit)` : ''
      return `- ${row.id} (${row.target}): ${said}${overran}`
    })
  ]
  const crashes = rows.filter(function crashed (r) { return r.crashLines?.length > 0 })
  if (crashes.length > 0) {
    lines.push('', 'Crash lines:', '')
    for (const row of crashes) for (const line of row.crashLines.slice(0, 8)) lines.push(`- ${row.label}: ${line}`)
  }
  return lines.join('\n') + '\n'
}

/** One chart: the worker's RSS through each attack. */
export function hostileCharts (rows) {
  return [{
    title: 'Worker RSS during each attack',
    x: 's since the attack started',
    y: 'MiB',
    series: rows.filter(function sampled (r) { return r.rssPoints?.length > 0 }).map(function series (row) {
      return { label: row.label, points: row.rssPoints.map(function point (p) { return { x: p.s, y: p.rss / MiB } }) }
    })
  }]
}
