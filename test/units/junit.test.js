/**
 * The card as JUnit XML (grader/card/junit.js, `--junit FILE`): a testsuite per
 * area and a testcase per check, a failure carrying the figure, the limit, why
 * and the hint; every value escaped, control characters, bidi marks and the characters
 * XML 1.0 cannot hold written as visible escapes (lib/util/escape.js); read back by a strict reader (test/xml.js). Nothing graded:
 * the cards are made here.
 */
import assert from 'node:assert/strict'
import { junitXml, xmlText } from '../../grader/card/junit.js'
import { compareWithBaseline } from '../../grader/card/baseline.js'
import { elementsNamed, readXml } from '../xml.js'

/** A card as grade() returns it, three areas, one check failing with a hostile figure. */
function cardOf (overrides = {}) {
  return {
    handler: 'http://127.0.0.1:3100/ingest',
    preset: 'quick',
    seed: 7,
    labVersion: '0.1.0',
    digest: null,
    startedAt: '2026-11-27T10:00:00.000Z',
    ms: 61_234,
    checks: [
      { area: 'correctness', name: 'generated documents', pass: true, figure: '6/6 answers match', limit: 'every answer matches', hint: 'count records', reason: null, ms: 1200 },
      { area: 'correctness', name: 'escapes', pass: true, figure: '2/2 answers match', limit: 'every answer matches', hint: 'read strings', reason: null, ms: 300 },
      { area: 'memory', name: 'growth against body size', pass: false, figure: '+312.0 MiB per 100 MB (+15 / +160 / +470 MiB)', limit: 'at most 25 MiB per 100 MB', hint: 'stream the body: <pipeline> & "no" buffering', reason: 'it holds the body\nwhole', ms: 20_000 },
      { area: 'speed', name: 'throughput against /streamparser-json', pass: true, figure: '17.0 MB/s, 1.59×', limit: 'at least 0.5×', hint: 'x', reason: null, ms: 9000 }
    ],
    ...overrides
  }
}

describe('grader/card/junit.js', function () {
  describe('xmlText', function () {
    it('escapes the five characters XML gives meaning to', function () {
      assert.equal(xmlText('a < b && c > "d" \'e\''), 'a &lt; b &amp;&amp; c &gt; &quot;d&quot; &apos;e&apos;')
    })

    it('writes control characters, bidi marks and what XML 1.0 forbids as visible escapes, as the text card does', function () {
      assert.equal(xmlText('a\x00b\x1b[31mc\x7fd'), 'a\\x00b\\x1b[31mc\\x7fd')
      assert.equal(xmlText('x\uD800y\uDFFFz'), 'x\\ud800y\\udfffz')
      assert.equal(xmlText('\uFFFE\uFFFF'), '\\ufffe\\uffff')
      assert.equal(xmlText('a\tb\nc\rd \u202e'), 'a\\tb\\nc\\rd \\u202e')
    })

    it('keeps characters past the BMP, U+FFFD and letters of any script as they are', function () {
      assert.equal(xmlText('d 😀 \uFFFD é 山田'), 'd 😀 \uFFFD é 山田')
    })

    it('gives an attribute one line that reads back as written', function () {
      const root = readXml(`<a v="${xmlText('one\ntwo')}"/>`)
      assert.equal(root.attributes.v, 'one\\ntwo')
    })
  })

  describe('the reader these specs use (test/xml.js)', function () {
    it('refuses what a JUnit consumer\'s parser would: forbidden characters, a raw & or <, tags out of order', function () {
      for (const bad of ['<a>\x1b</a>', '<a>x & y</a>', '<a v="<"/>', '<a><b></a></b>', '<a/><b/>', '<a x="1" x="2"/>', '<a>&#0;</a>', '<a>']) {
        assert.throws(function read () { readXml(bad) }, SyntaxError, JSON.stringify(bad))
      }
      assert.equal(readXml('<?xml version="1.0"?>\n<a>x &amp; &#x1F600;</a>').text, 'x & \u{1F600}')
    })
  })

  describe('junitXml', function () {
    it('writes a testsuite per area that ran, in the areas\' order, and a testcase per check', function () {
      const root = readXml(junitXml(cardOf()))
      assert.equal(root.name, 'testsuites')
      assert.deepEqual([root.attributes.tests, root.attributes.failures, root.attributes.time], ['4', '1', '61.234'])
      const suites = elementsNamed(root, 'testsuite')
      assert.deepEqual(suites.map(function name (s) { return [s.attributes.name, s.attributes.tests, s.attributes.failures] }),
        [['correctness', '2', '0'], ['memory', '1', '1'], ['speed', '1', '0']])
      const cases = elementsNamed(root, 'testcase')
      assert.deepEqual(cases.map(function name (c) { return `${c.attributes.classname} / ${c.attributes.name}` }), [
        'streamlab.correctness / generated documents',
        'streamlab.correctness / escapes',
        'streamlab.memory / growth against body size',
        'streamlab.speed / throughput against /streamparser-json'
      ])
      assert.equal(cases[2].attributes.time, '20.000')
    })

    it('gives a failed check a failure with the figure and the limit as its message, and why and the hint in its text', function () {
      const root = readXml(junitXml(cardOf()))
      const failures = elementsNamed(root, 'failure')
      assert.equal(failures.length, 1)
      assert.equal(failures[0].attributes.message, '+312.0 MiB per 100 MB (+15 / +160 / +470 MiB) [limit: at most 25 MiB per 100 MB]')
      assert.equal(failures[0].text, [
        'figure: +312.0 MiB per 100 MB (+15 / +160 / +470 MiB)',
        'limit: at most 25 MiB per 100 MB',
        'why: it holds the body\\nwhole',
        'hint: stream the body: <pipeline> & "no" buffering'
      ].join('\n'))
    })

    it('names the run in each suite\'s properties: the target, preset, seed, lab version and digest', function () {
      const [suite] = elementsNamed(readXml(junitXml(cardOf({ digest: 'ab'.repeat(32) }))), 'testsuite')
      const properties = Object.fromEntries(elementsNamed(suite, 'property').map(function pair (p) { return [p.attributes.name, p.attributes.value] }))
      assert.deepEqual(properties, { handler: 'http://127.0.0.1:3100/ingest', preset: 'quick', seed: '7', labVersion: '0.1.0', sha256: 'ab'.repeat(32) })
    })

    it('stays well-formed whatever the target put in a name, a figure or a reason', function () {
      const hostile = 'x" onload="1 <b>&amp;</b> ]]> \x1b[2J \x00 \uD83D \u202e'
      const card = cardOf()
      card.handler = `bob ${hostile}.js`
      card.checks[2] = { ...card.checks[2], name: `memory ${hostile}`, figure: hostile, reason: hostile, hint: hostile }
      const xml = junitXml(card)
      const root = readXml(xml)
      const failure = elementsNamed(root, 'failure')[0]
      assert.match(failure.attributes.message, /^x" onload="1 <b>&amp;<\/b> \]\]> \\x1b\[2J \\x00 \\ud83d \\u202e/)
      assert.equal(elementsNamed(root, 'testcase').length, 4, 'no case forged by a name')
      assert.ok(!xml.includes('\x00') && !xml.includes('\x1b') && !xml.includes('\u202e'), 'no raw control character or bidi mark')
    })

    it('takes the --json card as well as the card grade() returns', function () {
      const card = cardOf()
      const doc = { ...card, date: card.startedAt, durationMs: card.ms, sha256: null, startedAt: undefined, ms: undefined }
      const root = readXml(junitXml(doc))
      assert.equal(root.attributes.time, '61.234')
      assert.equal(elementsNamed(root, 'testsuite')[0].attributes.timestamp, '2026-11-27T10:00:00.000Z')
    })

    it('adds a baseline suite, a case per figure compared and a failure naming the baseline for one worse', function () {
      const measure = function measure (value) { return { area: 'memory', check: 'growth against body size', name: 'slope', value, unit: 'MiB per 100 MB', better: 'lower' } }
      const run = { handler: 'h', preset: 'quick', seed: 7, labVersion: '0.1.0', measures: [measure(312)] }
      const gate = compareWithBaseline(run, { ...run, measures: [measure(1.2)] }, { file: 'ci/baseline.json' })
      const root = readXml(junitXml(cardOf(), { baseline: gate }))
      const suite = elementsNamed(root, 'testsuite').find(function named (s) { return s.attributes.name === 'baseline' })
      assert.deepEqual([suite.attributes.tests, suite.attributes.failures], ['1', '1'])
      const failure = elementsNamed(suite, 'failure')[0]
      assert.match(failure.attributes.message, /worse than the baseline by 310\.8 MiB per 100 MB/)
      assert.match(failure.text, /baseline: ci\/baseline\.json$/)
      assert.equal(root.attributes.failures, '2')
    })
  })
})
