/** The card as JUnit XML (`--junit FILE`): a suite per area, a case per check, a `baseline` suite; every value via xmlText. */
import { AREAS } from '../checks/index.js'
import { memorySitesOf, sitesLines } from './sites-lines.js'
import { xmlText } from '../../lib/util/escape.js'

export { xmlText }

/** The XML document of a card (as grade() returns it, or its --json document), with the baseline's suite if given. */
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
    `<testsuites name="${xmlText(`streamlab grade: ${card.handler}`)}" tests="${tests}" failures="${failures}" errors="0" ` +
      `time="${seconds.toFixed(3)}">`,
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
  ].map(function property ([name, value]) { return `      <property name="${name}" value="${xmlText(value)}"/>` })
  const cases = checks.map(function testcase (c) {
    const open = `    <testcase classname="${xmlText(`streamlab.${area}`)}" name="${xmlText(c.name)}" ` +
      `time="${((c.ms ?? 0) / 1000).toFixed(3)}"`
    if (c.pass) return `${open}/>`
    const body = [
      `figure: ${c.figure}`,
      `limit: ${c.limit}`,
      ...(c.reason ? [`why: ${c.reason}`] : []),
      ...(area === 'memory' ? sitesLines(memorySitesOf(card)) : []),
      `hint: ${c.hint ?? ''}`
    ].map(xmlText).join('\n')
    return [
      `${open}>`,
      `      <failure type="streamlab.check" message="${xmlText(`${c.figure} [limit: ${c.limit}]`)}">${body}</failure>`,
      '    </testcase>'
    ].join('\n')
  })
  return {
    tests: checks.length,
    failures,
    xml: [
      `  <testsuite name="${xmlText(area)}" tests="${checks.length}" failures="${failures}" errors="0" skipped="0" ` +
        `time="${time.toFixed(3)}" timestamp="${xmlText(date)}">`,
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
  const refused = baseline.lines.length === 0 && !baseline.passed
  const failures = baseline.lines.filter(function worse (l) { return l.worse }).length + (refused ? 1 : 0)
  const cases = baseline.lines.map(function testcase (l) {
    const open = `    <testcase classname="streamlab.baseline" name="${xmlText(`${l.area}: ${l.check}, ${l.name}`)}" time="0.000"`
    if (!l.worse) return `${open}/>`
    return `${open}>\n      <failure type="streamlab.baseline" ` +
      `message="${xmlText(l.text)}">${xmlText(l.text)}\n${xmlText(`baseline: ${baseline.file}`)}</failure>\n    </testcase>`
  })
  if (baseline.lines.length === 0 && !baseline.passed) {
    // refused (another preset): one failing case says why, so that the report does not show a green gate
    const message = xmlText(baseline.notes[0] ?? 'not compared')
    cases.push(`    <testcase classname="streamlab.baseline" name="baseline compared" time="0.000">\n      <failure ` +
      `type="streamlab.baseline" message="${message}">${baseline.notes.map(xmlText).join('\n')}</failure>\n    </testcase>`)
  }
  const tests = cases.length
  return {
    tests,
    failures,
    xml: [
      `  <testsuite name="baseline" tests="${tests}" failures="${failures}" errors="0" skipped="0" time="0.000" ` +
        `timestamp="${xmlText(date)}">`,
      '    <properties>',
      `      <property name="baseline" value="${xmlText(baseline.file)}"/>`,
      `      <property name="tolerance" value="${xmlText(`${baseline.tolerance * 100}%`)}"/>`,
      '    </properties>',
      ...cases,
      ...(baseline.notes.length > 0 ? [`    <system-out>${baseline.notes.map(xmlText).join('\n')}</system-out>`] : []),
      '  </testsuite>'
    ].join('\n')
  }
}
