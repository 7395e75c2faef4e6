/** The card as text: a line per check, reference routes, a failure's reason and hint, the verdict per area. */
import { encodingsLine } from '../checks/encodings.js'
import { AREAS } from '../checks/index.js'
import { memorySitesOf, sitesLines } from './sites-lines.js'
import { terminalText } from '../../lib/util/escape.js'

/** The card as text, every control character in a line shown escaped (lib/util/escape.js). */
export function formatCard (card) {
  const seed = card.seed === undefined ? '' : `, seed ${card.seed}`
  const what = card.service ? `service ${card.handler}` : card.handler
  const lines = [`Grade card: ${what} (${card.preset === 'quick' ? '--quick' : `${card.preset} run`}, ` +
    `${(card.ms / 1000).toFixed(1)} s${seed})`]
  if (card.service) lines.push(...serviceLines(card.service))
  if (card.loadError) lines.push(`  ${card.service ? 'The service did not start' : 'The module did not load'}: ${card.loadError}`)
  if (card.encodings) lines.push(`  encodings: ${encodingsLine(card.encodings)}`)
  const nameWidth = Math.max(...card.checks.map(function width (c) { return c.name.length }))
  // the lines of code the memory area's sites name, under its first failed check
  let sites = sitesLines(memorySitesOf(card))
  for (const c of card.checks) {
    lines.push(`${c.pass ? 'PASS' : 'FAIL'}  ${c.area.padEnd(11)}  ${c.name.padEnd(nameWidth)}  ${c.figure}  ` +
      `[limit: ${c.limit}]  ${c.meaning}`)
    const beside = besideLine(c)
    if (beside !== null) lines.push(`      beside: ${beside}`)
    if (!c.pass) {
      if (c.reason) lines.push(`      why:  ${c.reason.split('\n')[0]}`)
      if (c.area === 'memory') {
        for (const line of sites) lines.push(`      ${line}`)
        sites = []
      }
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
  if (card.lab.restarts > 0) lines.push(`(the lab was started again ${card.lab.restarts} ` +
    `time${card.lab.restarts === 1 ? '' : 's'} during the run)`)
  if (card.seed !== undefined) {
    const digest = card.service ? '' : ` · sha256 ${card.digest ?? 'not read'}`
    lines.push(`seed ${card.seed} (--seed ${card.seed} sends the same bodies again)${digest} · lab ${card.labVersion}`)
  }
  // each line escaped: the handler's path, its load error and a check's reason are the submission's text
  return lines.map(terminalText).join('\n') + '\n'
}

/** What a service's card says first: how the grader knew it, the contract it was judged by, remote, notes. */
function serviceLines (service) {
  const how = {
    started: `started by the lab: ${service.command}${service.pid === null ? '' : ` (last pid ${service.pid})`}; memory read from ` +
      `outside, the process tree's`,
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
    const missing = probe !== null && probe.status >= 400 && probe.status < 500 ? ' (a 4xx to a valid document: a header it needs may ' +
      'be missing, --header)' : ''
    lines.push(`  contract: ${contract}; a small valid document got ${probe?.why ?? 'no answer'}${missing}`)
  }
  if (service.headers.length > 0) lines.push(`  headers sent with every body: ${service.headers.join(', ')}`)
  for (const note of service.notes) lines.push(`  note: ${note}`)
  return lines
}

/** The reference slopes under a memory check: "/good +0.4 · /bad +431.2 (MiB per 100 MB: …)"; null if not measured. */
function besideLine (check) {
  const slopes = check.details?.referenceSlopes
  if (!slopes) return null
  const parts = Object.entries(slopes).map(function slopeText ([route, slope]) {
    return slope === null ? `/${route} not measured` : `/${route} ${slope >= 0 ? '+' : ''}${slope.toFixed(1)}`
  })
  return `${parts.join(' · ')} (${check.details.unit}: the lab's routes on the same bodies)`
}

/** Per area the card covers, pass or fail: { correctness: true, memory: false, … }. */
export function areaVerdicts (card) {
  const verdicts = {}
  for (const area of areasOf(card)) {
    verdicts[area] = card.checks.filter(function inArea (c) { return c.area === area }).every(function passed (c) { return c.pass })
  }
  return verdicts
}

function areasOf (card) {
  return AREAS.filter(function present (area) { return card.checks.some(function inArea (c) { return c.area === area }) })
}
