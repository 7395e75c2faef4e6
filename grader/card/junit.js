/**
 * The card as JUnit XML (`--junit FILE`), the report GitHub, GitLab and
 * Jenkins show per test: one <testsuite> per area, one <testcase> per check,
 * a failed check's <failure> carrying its figure, its limit, why and the
 * hint; with `--baseline`, a suite `baseline` with a case per figure compared.
 *
 * Everything is text the target controls in part (a URL, a reason quoting
 * what the service answered), so every value is escaped for XML, and the
 * characters XML 1.0 cannot hold at all (control characters, lone
 * surrogates, U+FFFE and U+FFFF) are written as visible escapes (`\x1b`),
 * as the terminal shows them, rather than lost.
 */
import { AREAS } from '../checks/index.js'
import { memorySitesOf, sitesLines } from './sites-lines.js'

// XML 1.0's Char production, negated: what no XML 1.0 document may contain, even as &#...;
const FORBIDDEN = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu

/**
 * Text made safe for XML 1.0: forbidden characters as visible escapes, then &, <, > and both
 * quotes as entities; in an attribute, tab and line breaks as character references (an
 * attribute's own line breaks would be read back as spaces).
 * @param {unknown} value
 * @param {{ attribute?: boolean }} [options]
 * @returns {string}
 */
export function xmlText (value, { attribute = false } = {}) {
  const visible = String(value ?? '').replace(FORBIDDEN, function escaped (c) {
    const code = c.codePointAt(0)
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
  const text = visible.replace(/[&<>"']/g, function entity (c) {
    return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }[c]
  })
  return attribute ? text.replace(/[\t\n\r]/g, function reference (c) { return `&#${c.charCodeAt(0)};` }) : text
}

/**
 * @param {{ handler: string, preset: string, seed: number, labVersion: string, sha256?: string|null, digest?: string|null,
 *   startedAt?: string, date?: string, ms?: number, durationMs?: number,
 *   checks: Array<{ area: string, name: string, pass: boolean, figure: string, limit: string, hint: string|null,
 *     reason?: string|null, meaning?: string, ms?: number }> }} card as grade() returns it, or its --json document
 * @param {{ baseline?: import('./baseline.js').BaselineResult|null }} [options]
 * @returns {string} the XML document
 */
export function junitXml (card, { baseline = null } = {}) {
  const date = card.startedAt ?? card.date ?? new Date(0).toISOString()
  const suites = AREAS
    .map(function suiteOf (area) { return { area, checks: card.checks.filter(function inArea (c) { return c.area === area }) } })
    .filter(function ran (suite) { return suite.checks.length > 0 })
    .map(function suite ({ area, checks }) { return areaSuite(card, area, checks, date) })
  if (baseline !== null) suites.push(baselineSuite(baseline, date))
  const tests = suites.reduce(function sum (n, s) { return n + s.tests }, 0)
  const failures = suites.reduce(function sum (n, s) { return n + s.failures }, 0)
  const seconds = (card.ms ?? card.durationMs ?? 0) / 1000
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xmlText(`streamlab grade: ${card.handler}`, { attribute: true })}" tests="${tests}" failures="${failures}" errors="0" time="${seconds.toFixed(3)}">`,
    ...suites.map(function text (s) { return s.xml }),
    '</testsuites>',
    ''
  ].join('\n')
}

/** One area's suite: its checks as test cases, the run's seed, preset, lab and digest as properties. */
function areaSuite (card, area, checks, date) {
  const failures = checks.filter(function failed (c) { return !c.pass }).length
  const time = checks.reduce(function sum (ms, c) { return ms + (c.ms ?? 0) }, 0) / 1000
  const properties = [
    ['handler', card.handler],
    ['preset', card.preset],
    ['seed', card.seed],
    ['labVersion', card.labVersion],
    ['sha256', card.sha256 ?? card.digest ?? '']
  ].map(function property ([name, value]) { return `      <property name="${name}" value="${xmlText(value, { attribute: true })}"/>` })
  const cases = checks.map(function testcase (c) {
    const open = `    <testcase classname="${xmlText(`streamlab.${area}`, { attribute: true })}" name="${xmlText(c.name, { attribute: true })}" time="${((c.ms ?? 0) / 1000).toFixed(3)}"`
    if (c.pass) return `${open}/>`
    const body = [
      `figure: ${c.figure}`,
      `limit: ${c.limit}`,
      ...(c.reason ? [`why: ${c.reason}`] : []),
      ...(area === 'memory' ? sitesLines(memorySitesOf(card)) : []),
      `hint: ${c.hint ?? ''}`
    ].join('\n')
    return [
      `${open}>`,
      `      <failure type="streamlab.check" message="${xmlText(`${c.figure} [limit: ${c.limit}]`, { attribute: true })}">${xmlText(body)}</failure>`,
      '    </testcase>'
    ].join('\n')
  })
  return {
    tests: checks.length,
    failures,
    xml: [
      `  <testsuite name="${xmlText(area, { attribute: true })}" tests="${checks.length}" failures="${failures}" errors="0" skipped="0" time="${time.toFixed(3)}" timestamp="${xmlText(date, { attribute: true })}">`,
      '    <properties>',
      ...properties,
      '    </properties>',
      ...cases,
      '  </testsuite>'
    ].join('\n')
  }
}

/** The baseline gate as a suite: a case per figure compared, a failure for each one worse; the notes as its output. */
function baselineSuite (baseline, date) {
  const failures = baseline.lines.filter(function worse (l) { return l.worse }).length + (baseline.lines.length === 0 && !baseline.passed ? 1 : 0)
  const cases = baseline.lines.map(function testcase (l) {
    const open = `    <testcase classname="streamlab.baseline" name="${xmlText(`${l.area}: ${l.check}, ${l.name}`, { attribute: true })}" time="0.000"`
    if (!l.worse) return `${open}/>`
    return `${open}>\n      <failure type="streamlab.baseline" message="${xmlText(l.text, { attribute: true })}">${xmlText(`${l.text}\nbaseline: ${baseline.file}`)}</failure>\n    </testcase>`
  })
  if (baseline.lines.length === 0 && !baseline.passed) {
    // refused (another preset): one failing case says why, so that the report does not show a green gate
    cases.push(`    <testcase classname="streamlab.baseline" name="baseline compared" time="0.000">\n      <failure type="streamlab.baseline" message="${xmlText(baseline.notes[0] ?? 'not compared', { attribute: true })}">${xmlText(baseline.notes.join('\n'))}</failure>\n    </testcase>`)
  }
  const tests = cases.length
  return {
    tests,
    failures,
    xml: [
      `  <testsuite name="baseline" tests="${tests}" failures="${failures}" errors="0" skipped="0" time="0.000" timestamp="${xmlText(date, { attribute: true })}">`,
      '    <properties>',
      `      <property name="baseline" value="${xmlText(baseline.file, { attribute: true })}"/>`,
      `      <property name="tolerance" value="${xmlText(`${baseline.tolerance * 100}%`, { attribute: true })}"/>`,
      '    </properties>',
      ...cases,
      ...(baseline.notes.length > 0 ? [`    <system-out>${xmlText(baseline.notes.join('\n'))}</system-out>`] : []),
      '  </testsuite>'
    ].join('\n')
  }
}
