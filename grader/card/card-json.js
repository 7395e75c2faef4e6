/** The card as the --json document, and its contract (`validateCardJson`): the keys in grader/card/README.md. */
import { AREAS, checksOf } from '../checks/index.js'
import { MAX_SEED, PRESET_NAMES } from '../checks/settings.js'
import { areaVerdicts } from './card.js'
import { cardMeasures, measuresProblems } from './measures.js'
import { memorySitesOf } from './sites-lines.js'

const KEYS = Object.freeze(['area', 'name', 'pass', 'figure', 'limit', 'hint'])
const CARD_KEYS = Object.freeze([
  'handler', 'verdict', 'preset', 'seed', 'date', 'durationMs', 'labVersion', 'sha256', 'areas', 'encodings', 'checks', 'measures'
])
const ENCODINGS_KEYS = Object.freeze(['mediaType', 'accepted', 'refused', 'other', 'untried'])
const SERVICE_KEYS = Object.freeze(['url', 'mode', 'command', 'pid', 'remote', 'contract', 'headers', 'notes'])
const SERVICE_MODES = Object.freeze(['started', 'watched', 'unwatched'])
const SITE_LINE_KEYS = Object.freeze(['file', 'line', 'functionName', 'kinds', 'allocatedMiB', 'heldMiB', 'share', 'code', 'does'])

export function cardJson (card) {
  const areas = {}
  for (const [area, passed] of Object.entries(areaVerdicts(card))) areas[area] = passed ? 'pass' : 'fail'
  const service = card.service === undefined
    ? {}
    : { service: Object.fromEntries(SERVICE_KEYS.map(function pick (key) { return [key, card.service[key] ?? null] })) }
  return {
    handler: card.handler, verdict: card.passed ? 'pass' : 'fail', preset: card.preset, seed: card.seed,
    date: card.startedAt, durationMs: Math.round(card.ms), labVersion: card.labVersion, sha256: card.digest ?? null,
    areas,
    encodings: card.encodings ? Object.fromEntries(ENCODINGS_KEYS.map(function pick (key) { return [key, card.encodings[key]] })) : null,
    checks: card.checks.map(function pick (c) {
      return { area: c.area, name: c.name, pass: c.pass, figure: c.figure, limit: c.limit, hint: c.pass ? null : c.hint }
    }),
    measures: cardMeasures(card),
    memorySites: memorySitesOf(card),
    ...service
  }
}

/** What is wrong with a --json document; empty when it holds the contract. */
export function validateCardJson (doc) {
  const problems = []
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return ['the card is not an object']
  const keys = Object.keys(doc).sort()
  const expected = [...CARD_KEYS, ...['service', 'memorySites'].filter(function present (key) { return Object.hasOwn(doc, key) })]
  if (keys.join() !== [...expected].sort().join()) problems.push(`the card has keys ${keys.join(', ')}, not ${expected.join(', ')}`)
  if (doc.memorySites !== undefined && doc.memorySites !== null) problems.push(...memorySitesProblems(doc.memorySites))
  if (Object.hasOwn(doc, 'service')) problems.push(...serviceProblems(doc.service))
  if (typeof doc.handler !== 'string' || doc.handler === '') problems.push('handler must be a non-empty string')
  if (!PRESET_NAMES.includes(doc.preset)) problems.push(`preset must be one of ${PRESET_NAMES.join(', ')}`)
  const seedOk = Number.isSafeInteger(doc.seed) && doc.seed >= 0 && doc.seed <= MAX_SEED
  if (!seedOk) problems.push(`seed must be a whole number from 0 to ${MAX_SEED}`)
  if (typeof doc.date !== 'string' || Number.isNaN(Date.parse(doc.date))) problems.push('date must be an ISO date')
  if (!Number.isSafeInteger(doc.durationMs) || doc.durationMs < 0) problems.push('durationMs must be a whole number of milliseconds')
  if (typeof doc.labVersion !== 'string' || doc.labVersion === '') problems.push('labVersion must be a non-empty string')
  if (doc.sha256 !== null && !/^[0-9a-f]{64}$/.test(doc.sha256 ?? '')) problems.push('sha256 must be 64 hex digits (null only for a ' +
    'file that could not be read, or a service)')
  if (doc.encodings !== null) problems.push(...encodingsProblems(doc.encodings))
  if (!Array.isArray(doc.checks) || doc.checks.length === 0) return [...problems, 'checks must be a non-empty array']
  problems.push(...registryProblems(doc.checks, doc.areas))
  problems.push(...measuresProblems(doc.measures, doc.checks, doc.preset))
  const allPassed = doc.checks.every(function passed (c) { return c?.pass === true })
  if (doc.verdict !== (allPassed ? 'pass' : 'fail')) problems.push(`verdict must be ${allPassed ? 'pass' : 'fail'}: it is pass only ` +
    `when every check passed`)
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
    if (c.pass === false && (typeof c.hint !== 'string' || c.hint === '')) problems.push(`${at}.hint must be a string when the check ` +
      `failed`)
  })
  return problems
}

/** Whether `checks` are the grader's checks of the card's areas (checks/index.js), every one, in order. */
function registryProblems (checks, areas) {
  if (areas === null || typeof areas !== 'object' || Array.isArray(areas)) return []
  const graded = AREAS.filter(function named (area) { return Object.hasOwn(areas, area) })
  if (graded.length === 0) return ['areas must name the areas graded']
  const expected = checksOf(graded)
  const said = function said (c) { return `${c?.area}: ${c?.name}` }
  const count = `checks has ${checks.length} check${checks.length === 1 ? '' : 's'}, the grader's of ` +
    `${graded.join(', ')} are ${expected.length}`
  for (const [k, check] of expected.entries()) {
    if (k >= checks.length) return [`${count}: checks[${k}] must be "${said(check)}"`]
    if (checks[k]?.area !== check.area || checks[k]?.name !== check.name) return [`checks[${k}] is "${said(checks[k])}", the grader's ` +
      `check there is "${said(check)}" (the areas ${graded.join(', ')} have ${expected.length})`]
  }
  if (checks.length > expected.length) return [`${count}: checks[${expected.length}] "${said(checks[expected.length])}" is none of them`]
  return []
}

function encodingsProblems (encodings) {
  if (encodings === null || typeof encodings !== 'object' || Array.isArray(encodings)) return ['encodings must be an object or null']
  const problems = []
  const keys = Object.keys(encodings).sort()
  if (keys.join() !== [...ENCODINGS_KEYS].sort().join()) problems.push(`encodings has keys ${keys.join(', ')}, not ` +
    `${ENCODINGS_KEYS.join(', ')}`)
  if (typeof encodings.mediaType !== 'string' || !encodings.mediaType.includes('/')) {
    problems.push('encodings.mediaType must be a media type')
  }
  for (const key of ['accepted', 'refused']) {
    if (!arrayOf(encodings[key], function named (c) { return typeof c === 'string' && c !== '' })) {
      problems.push(`encodings.${key} must be an array of coding names`)
    }
  }
  for (const key of ['other', 'untried']) {
    if (!arrayOf(encodings[key], function said (e) { return typeof e?.coding === 'string' && typeof e?.why === 'string' })) {
      problems.push(`encodings.${key} must be an array of { coding, why }`)
    }
  }
  return problems
}

function arrayOf (value, isItem) {
  return Array.isArray(value) && value.every(isItem)
}

function isMiB (value) {
  return Number.isFinite(value) && value >= 0
}

function memorySitesProblems (sites) {
  if (typeof sites !== 'object' || Array.isArray(sites)) return ['memorySites must be an object or null']
  const problems = []
  if (typeof sites.sampled !== 'boolean') problems.push('memorySites.sampled must be a boolean')
  if (typeof sites.note !== 'string' || sites.note === '') problems.push('memorySites.note must be a non-empty string')
  if (sites.growthMiB !== null && !isMiB(sites.growthMiB)) problems.push('memorySites.growthMiB must be MiB or null')
  if (sites.allocatedMiB != null && !isMiB(sites.allocatedMiB)) problems.push('memorySites.allocatedMiB must be MiB or null')
  if (!Array.isArray(sites.lines) || sites.lines.length > 10) return [...problems, 'memorySites.lines must be an array of at most 10 lines']
  sites.lines.forEach(function lineProblems (l, k) {
    const at = `memorySites.lines[${k}]`
    const keysOk = l !== null && typeof l === 'object' && Object.keys(l).sort().join() === [...SITE_LINE_KEYS].sort().join()
    if (!keysOk) return problems.push(`${at} must have keys ${SITE_LINE_KEYS.join(', ')}`)
    if (typeof l.file !== 'string' || !Number.isSafeInteger(l.line) || l.line < 1) problems.push(`${at} must name a file and a line from 1`)
    if (!Number.isFinite(l.allocatedMiB) || (l.share !== null && !Number.isFinite(l.share))) {
      return problems.push(`${at}.allocatedMiB and share must be numbers (share may be null)`)
    }
    if (l.allocatedMiB < 0) problems.push(`${at}.allocatedMiB is ${l.allocatedMiB}: MiB allocated is not negative`)
    if (l.heldMiB !== null && !(Number.isFinite(l.heldMiB) && l.heldMiB >= 0)) problems.push(`${at}.heldMiB must be MiB from 0, or null`)
    const share = shareProblem(l, sites.allocatedMiB)
    if (share !== null) problems.push(`${at}.share ${share}`)
  })
  return problems
}

/** A site line's share is its allocatedMiB over memorySites.allocatedMiB, each rounded to 0.01: 0..1, or null. */
function shareProblem (line, allocatedMiB) {
  if (line.share === null) return null
  if (allocatedMiB == null) return 'must be null: the card has no allocation to share'
  if (line.share < 0 || line.share > 1) return `is ${line.share}: a share of what the lines allocated is from 0 to 1`
  const half = 0.005
  const least = Math.max(0, line.allocatedMiB - half) / (allocatedMiB + half) - half
  const most = allocatedMiB - half > 0 ? (line.allocatedMiB + half) / (allocatedMiB - half) + half : Infinity
  if (line.share < least || line.share > most) {
    const quotient = `${line.allocatedMiB} / ${allocatedMiB}`
    return `is ${line.share}, not allocatedMiB over memorySites.allocatedMiB (${quotient}): a share is what the ` +
      `line allocated of all its lines`
  }
  return null
}

function serviceProblems (service) {
  if (service === null || typeof service !== 'object' || Array.isArray(service)) return ['service must be an object']
  const problems = []
  const keys = Object.keys(service).sort()
  if (keys.join() !== [...SERVICE_KEYS].sort().join()) problems.push(`service has keys ${keys.join(', ')}, not ${SERVICE_KEYS.join(', ')}`)
  if (typeof service.url !== 'string' || !/^http:\/\//.test(service.url)) problems.push('service.url must be an http:// URL')
  if (!SERVICE_MODES.includes(service.mode)) problems.push(`service.mode must be one of ${SERVICE_MODES.join(', ')}`)
  if (typeof service.remote !== 'boolean') problems.push('service.remote must be a boolean')
  if (service.contract !== null && !['summary', 'status'].includes(service.contract)) {
    problems.push('service.contract must be summary, status, or null when the service never started')
  }
  if (!Array.isArray(service.headers) || !Array.isArray(service.notes)) problems.push('service.headers and service.notes must be arrays')
  return problems
}

/** The card's checks as a table for docs/figures/NAME.md (`--figures NAME`): area, check, verdict, figure. */
export function cardTable (doc) {
  const cell = function cell (text) { return String(text ?? '').replaceAll('|', '\\|').replace(/\s+/g, ' ') }
  const rows = doc.checks.map(function row (c) { return `| ${c.area} | ${cell(c.name)} | ${c.pass ? 'pass' : 'FAIL'} | ` +
    `${cell(c.figure)} |` })
  const passed = doc.checks.filter(function pass (c) { return c.pass }).length
  return [
    `${passed} of ${doc.checks.length} checks passed (${doc.verdict}); preset ${doc.preset}, seed ${doc.seed}, ` +
      `${Math.round(doc.durationMs / 1000)} s.`,
    '',
    '| area | check | verdict | figure |',
    '| --- | --- | --- | --- |',
    ...rows,
    ''
  ].join('\n')
}
