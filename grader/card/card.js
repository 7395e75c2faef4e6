/**
 * The grade card, as text (one line per check, then its reason and hint
 * when it failed) and as the --json document:
 *
 *   { "handler": "exercises/…/starter.js", "verdict": "fail", "preset": "quick",
 *     "seed": 3085585045, "date": "2026-11-25T12:30:00.000Z", "durationMs": 61234,
 *     "labVersion": "0.1.0+a569919eab44", "sha256": "57a9…",
 *     "areas": { "correctness": "pass", "memory": "fail", … },
 *     "checks": [ { "area", "name", "pass", "figure", "limit", "hint" } ] }
 *
 * `verdict` is pass only when every check passed; `seed` draws the same
 * bodies again (`--seed`); `date` is when the run started; `labVersion` is
 * package.json's version with the git commit; `sha256` the graded file's
 * digest, taken before it was loaded. `areas` has the areas the run
 * covered. In `checks`, `area` is one of correctness, memory, speed,
 * safety, resilience; `pass` a boolean; `figure` and `limit` strings with
 * their units; `hint` a string when the check failed, null when it passed.
 * The contract is `validateCardJson`, which the specs hold every card to.
 *
 * A service's card (grader/service.js, `--url`) has `handler` set to the
 * URL, `sha256` null (no file was graded), and one more key, `service`:
 * { url, mode: 'started'|'watched'|'unwatched', command, pid, remote,
 * contract: 'summary'|'status', headers (their names), notes }.
 */
import { AREAS } from './index.js'
import { MAX_SEED } from './settings.js'

const KEYS = Object.freeze(['area', 'name', 'pass', 'figure', 'limit', 'hint'])
const CARD_KEYS = Object.freeze(['handler', 'verdict', 'preset', 'seed', 'date', 'durationMs', 'labVersion', 'sha256', 'areas', 'checks'])
const SERVICE_KEYS = Object.freeze(['url', 'mode', 'command', 'pid', 'remote', 'contract', 'headers', 'notes'])
const SERVICE_MODES = Object.freeze(['started', 'watched', 'unwatched'])

/**
 * @param {import('./index.js').Card} card
 * @returns {{ handler: string, verdict: 'pass'|'fail', preset: string, seed: number, date: string, durationMs: number,
 *   labVersion: string, sha256: string|null, areas: Record<string, 'pass'|'fail'>,
 *   checks: Array<{ area: string, name: string, pass: boolean, figure: string, limit: string, hint: string|null }> }}
 */
export function cardJson (card) {
  const areas = {}
  for (const [area, passed] of Object.entries(areaVerdicts(card))) areas[area] = passed ? 'pass' : 'fail'
  const service = card.service === undefined
    ? {}
    : { service: Object.fromEntries(SERVICE_KEYS.map(function pick (key) { return [key, card.service[key] ?? null] })) }
  return {
    handler: card.handler,
    verdict: card.passed ? 'pass' : 'fail',
    preset: card.preset,
    seed: card.seed,
    date: card.startedAt,
    durationMs: Math.round(card.ms),
    labVersion: card.labVersion,
    sha256: card.digest ?? null,
    areas,
    checks: card.checks.map(function pick (c) {
      return { area: c.area, name: c.name, pass: c.pass, figure: c.figure, limit: c.limit, hint: c.pass ? null : c.hint }
    }),
    ...service
  }
}

/**
 * Check a --json document against the contract.
 * @param {any} doc
 * @returns {string[]} what is wrong; empty when it holds
 */
export function validateCardJson (doc) {
  const problems = []
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return ['the card is not an object']
  const keys = Object.keys(doc).sort()
  const expected = Object.hasOwn(doc, 'service') ? [...CARD_KEYS, 'service'] : CARD_KEYS
  if (keys.join() !== [...expected].sort().join()) problems.push(`the card has keys ${keys.join(', ')}, not ${expected.join(', ')}`)
  if (Object.hasOwn(doc, 'service')) problems.push(...serviceProblems(doc.service))
  if (typeof doc.handler !== 'string' || doc.handler === '') problems.push('handler must be a non-empty string')
  if (typeof doc.preset !== 'string' || doc.preset === '') problems.push('preset must be a non-empty string')
  if (!Number.isSafeInteger(doc.seed) || doc.seed < 0 || doc.seed > MAX_SEED) problems.push(`seed must be a whole number from 0 to ${MAX_SEED}`)
  if (typeof doc.date !== 'string' || Number.isNaN(Date.parse(doc.date))) problems.push('date must be an ISO date')
  if (!Number.isSafeInteger(doc.durationMs) || doc.durationMs < 0) problems.push('durationMs must be a whole number of milliseconds')
  if (typeof doc.labVersion !== 'string' || doc.labVersion === '') problems.push('labVersion must be a non-empty string')
  if (doc.sha256 !== null && !/^[0-9a-f]{64}$/.test(doc.sha256 ?? '')) problems.push('sha256 must be 64 hex digits (null only for a file that could not be read, or a service)')
  if (!Array.isArray(doc.checks) || doc.checks.length === 0) return [...problems, 'checks must be a non-empty array']
  const allPassed = doc.checks.every(function passed (c) { return c?.pass === true })
  if (doc.verdict !== (allPassed ? 'pass' : 'fail')) problems.push(`verdict must be ${allPassed ? 'pass' : 'fail'}: it is pass only when every check passed`)
  if (doc.areas === null || typeof doc.areas !== 'object' || Array.isArray(doc.areas)) {
    problems.push('areas must be an object of area: pass|fail')
  } else {
    for (const [area, verdict] of Object.entries(doc.areas)) {
      const mine = doc.checks.filter(function inArea (c) { return c?.area === area })
      const expected = mine.every(function passed (c) { return c.pass === true }) ? 'pass' : 'fail'
      if (!AREAS.includes(area) || mine.length === 0) problems.push(`areas.${area} names an area with no checks on the card`)
      else if (verdict !== expected) problems.push(`areas.${area} must be ${expected}`)
    }
  }
  doc.checks.forEach(function checkOne (c, k) {
    const at = `checks[${k}]`
    if (c === null || typeof c !== 'object') return problems.push(`${at} is not an object`)
    const keys = Object.keys(c).sort()
    if (keys.join() !== [...KEYS].sort().join()) problems.push(`${at} has keys ${keys.join(', ')}, not ${KEYS.join(', ')}`)
    if (!AREAS.includes(c.area)) problems.push(`${at}.area must be one of ${AREAS.join(', ')}`)
    if (typeof c.name !== 'string' || c.name === '') problems.push(`${at}.name must be a non-empty string`)
    if (typeof c.pass !== 'boolean') problems.push(`${at}.pass must be a boolean`)
    if (typeof c.figure !== 'string' || c.figure === '') problems.push(`${at}.figure must be a non-empty string`)
    if (typeof c.limit !== 'string' || c.limit === '') problems.push(`${at}.limit must be a non-empty string`)
    if (c.pass === true && c.hint !== null) problems.push(`${at}.hint must be null when the check passed`)
    if (c.pass === false && (typeof c.hint !== 'string' || c.hint === '')) problems.push(`${at}.hint must be a string when the check failed`)
  })
  return problems
}

/** What is wrong with a service card's `service`. */
function serviceProblems (service) {
  if (service === null || typeof service !== 'object' || Array.isArray(service)) return ['service must be an object']
  const problems = []
  const keys = Object.keys(service).sort()
  if (keys.join() !== [...SERVICE_KEYS].sort().join()) problems.push(`service has keys ${keys.join(', ')}, not ${SERVICE_KEYS.join(', ')}`)
  if (typeof service.url !== 'string' || !/^http:\/\//.test(service.url)) problems.push('service.url must be an http:// URL')
  if (!SERVICE_MODES.includes(service.mode)) problems.push(`service.mode must be one of ${SERVICE_MODES.join(', ')}`)
  if (typeof service.remote !== 'boolean') problems.push('service.remote must be a boolean')
  if (service.contract !== null && !['summary', 'status'].includes(service.contract)) problems.push('service.contract must be summary, status, or null when the service never started')
  if (!Array.isArray(service.headers) || !Array.isArray(service.notes)) problems.push('service.headers and service.notes must be arrays')
  return problems
}

/**
 * The card as text: a header, a line per check (PASS or FAIL, the area,
 * the check, the figure, the limit, what it means), under a memory check
 * the lab's own routes measured the same way (when they were), and under a
 * failed check its reason and hint; then the verdict per area.
 * @param {import('./index.js').Card} card
 * @returns {string}
 */
export function formatCard (card) {
  const seed = card.seed === undefined ? '' : `, seed ${card.seed}`
  const what = card.service ? `service ${card.handler}` : card.handler
  const lines = [`Grade card: ${what} (${card.preset === 'quick' ? '--quick' : `${card.preset} run`}, ${(card.ms / 1000).toFixed(1)} s${seed})`]
  if (card.service) lines.push(...serviceLines(card.service))
  if (card.loadError) lines.push(`  ${card.service ? 'The service did not start' : 'The module did not load'}: ${card.loadError}`)
  const nameWidth = Math.max(...card.checks.map(function width (c) { return c.name.length }))
  for (const c of card.checks) {
    lines.push(`${c.pass ? 'PASS' : 'FAIL'}  ${c.area.padEnd(11)}  ${c.name.padEnd(nameWidth)}  ${c.figure}  [limit: ${c.limit}]  ${c.meaning}`)
    const beside = besideLine(c)
    if (beside !== null) lines.push(`      beside: ${beside}`)
    if (!c.pass) {
      if (c.reason) lines.push(`      why:  ${c.reason.split('\n')[0]}`)
      lines.push(`      hint: ${c.hint}`)
    }
  }
  lines.push('')
  lines.push(areasOf(card).map(function areaVerdict (area) {
    const mine = card.checks.filter(function inArea (c) { return c.area === area })
    const passed = mine.filter(function passed (c) { return c.pass }).length
    return `${area} ${passed === mine.length ? 'PASS' : 'FAIL'} (${passed}/${mine.length})`
  }).join(' · '))
  const passed = card.checks.filter(function passed (c) { return c.pass }).length
  lines.push(`${passed}/${card.checks.length} checks passed: ${card.passed ? 'PASS' : 'FAIL'}`)
  if (card.lab.restarts > 0) lines.push(`(the lab was started again ${card.lab.restarts} time${card.lab.restarts === 1 ? '' : 's'} during the run)`)
  if (card.seed !== undefined) {
    const digest = card.service ? '' : ` · sha256 ${card.digest ?? 'not read'}`
    lines.push(`seed ${card.seed} (--seed ${card.seed} sends the same bodies again)${digest} · lab ${card.labVersion}`)
  }
  return lines.join('\n') + '\n'
}

/**
 * What a service's card says before its checks: how the grader knew the
 * service (and so what it could measure), the contract its answers were
 * judged by, a remote target, and the notes of the run.
 */
function serviceLines (service) {
  const how = {
    started: `started by the lab: ${service.command}${service.pid === null ? '' : ` (last pid ${service.pid})`}; memory read from outside, the process tree's`,
    watched: `watched: pid ${service.pid}; memory read from outside, the process tree's; never signalled, not started again`,
    unwatched: 'no pid (neither --start nor --pid): memory could not be judged, and the memory lines say so'
  }[service.mode]
  const lines = [`  target: ${how}`]
  if (service.remote) lines.push('  remote: the target is not on this machine (--allow-remote): its memory cannot be read from here')
  if (service.contract !== null) {
    const contract = service.contract === 'summary'
      ? 'summary (the answers carry items and idSum: each is compared with the reference)'
      : 'status (the answers carry no summary fields: valid documents must get 2xx, broken ones 4xx; nothing is counted)'
    const probe = service.contractProbe
    const missing = probe !== null && probe.status >= 400 && probe.status < 500 ? ' (a 4xx to a valid document: a header it needs may be missing, --header)' : ''
    lines.push(`  contract: ${contract}; a small valid document got ${probe?.why ?? 'no answer'}${missing}`)
  }
  if (service.headers.length > 0) lines.push(`  headers sent with every body: ${service.headers.join(', ')}`)
  for (const note of service.notes) lines.push(`  note: ${note}`)
  return lines
}

/**
 * The reference routes' slopes under a memory check, measured as the handler's was:
 * "/good +0.4 · /streamparser-json +1.1 · /bad +431.2 (MiB per 100 MB: …)". Null when they were not measured.
 */
function besideLine (check) {
  const slopes = check.details?.referenceSlopes
  if (!slopes) return null
  const parts = Object.entries(slopes).map(function slopeText ([route, slope]) {
    return slope === null ? `/${route} not measured` : `/${route} ${slope >= 0 ? '+' : ''}${slope.toFixed(1)}`
  })
  return `${parts.join(' · ')} (${check.details.unit}: the lab's routes on the same bodies)`
}

/**
 * Per area the card covers, pass or fail: { correctness: true, memory: false, … }.
 * @param {{ checks: Array<{ area: string, pass: boolean }> }} card
 */
export function areaVerdicts (card) {
  const verdicts = {}
  for (const area of areasOf(card)) {
    verdicts[area] = card.checks.filter(function inArea (c) { return c.area === area }).every(function passed (c) { return c.pass })
  }
  return verdicts
}

/** The areas a card has checks in, in the usual order. */
function areasOf (card) {
  return AREAS.filter(function present (area) { return card.checks.some(function inArea (c) { return c.area === area }) })
}
