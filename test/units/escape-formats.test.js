/**
 * Every string a submission controls is escaped the same way in every format (lib/util/escape.js):
 * the same hostile names (a line break that forges a `PASS` line, a carriage return, ESC, NUL, DEL,
 * C1, the bidi marks that show `f\u202egnp.exe` as "fexe.png", U+FEFF, a lone surrogate, what XML
 * 1.0 forbids, markup) fed to the text card, the --json card, the JUnit report (read back strictly,
 * test/xml.js), the class table's CSV (read back, test/csv.js) and HTML, and an exported run page's
 * record; none reaches any of them raw. The dashboard draws them in Chromium:
 * test/slow/dashboard-sites.test.js.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { formatCard } from '../../grader/card/card.js'
import { cardJson } from '../../grader/card/card-json.js'
import { rowOf } from '../../grader/card/class-rows.js'
import { writeTable } from '../../grader/card/class-table.js'
import { junitXml } from '../../grader/card/junit.js'
import { embedRecord, emptyRecordElement } from '../../lib/runs/run-page-data.js'
import { csvField, htmlText, jsonText, shownText, xmlText } from '../../lib/util/escape.js'
import { gradedCard } from '../card-fixtures.js'
import { parseCsv } from '../csv.js'
import { makeSitesRecord } from '../runs-helpers.js'
import { elementsNamed, readXml } from '../xml.js'

/** Names a student would choose: each one holds something no output may show raw. */
const HOSTILE = Object.freeze([
  'parse\nPASS  memory  forged line',
  'cr\rPASS  18/18',
  'tab\tname',
  'nul\x00esc\x1b[2J\x1b]0;title\x07',
  'del\x7f c1\x85\x9b31m',
  'f\u202egnp.exe',
  '\u202a\u202b\u202c\u202d embeddings',
  '\u2066isolates\u2067\u2068\u2069',
  'marks\u200e\u200f\u061c',
  'bom\ufeff',
  'separators\u2028\u2029',
  'lone \ud800 surrogate',
  'xml-forbidden \ufffe\uffff',
  '<img src=x onerror="1"> & \'q\''
])

/** A character no output may hold raw (the writer's own line breaks are checked apart). */
const UNSAFE = /[^\P{Cc}\n\r]|[\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ufffe\uffff]|\p{Surrogate}/u
const LINE_BREAKS = /[\n\r]/

function sitesOf (name) {
  return {
    sampled: true,
    growthMiB: 300,
    allocatedMiB: 320,
    note: 'sampled on the graded process',
    lines: [{
      file: `${name}.js`, line: 12, functionName: name, kinds: ['heap'],
      allocatedMiB: 160, heldMiB: 150, share: 0.5, code: `const x = '${name}'`, does: null
    }]
  }
}

/** A card whose memory check failed, the student's name in its handler, its site's file, function and code, and its reason. */
function hostileCard (name) {
  const handler = `students/${name}/handler.js`
  const card = gradedCard({ areas: ['correctness', 'memory'], failing: ['growth against body size'], handler, digest: 'ab'.repeat(32) })
  const memory = card.checks.find(function failed (c) { return c.area === 'memory' && !c.pass })
  memory.reason = `it answered ${name}`
  memory.details.sites = sitesOf(name)
  return card
}

function assertNoneRaw (text, name, where) {
  assert.doesNotMatch(text, UNSAFE, `${where}: ${JSON.stringify(name)}`)
  if (LINE_BREAKS.test(name) || UNSAFE.test(name)) assert.ok(!text.includes(name), `${where} holds ${JSON.stringify(name)} raw`)
}

describe('every format escapes what a submission names the same way (lib/util/escape.js)', function () {
  it('shows each character of every format\'s list escaped in the text form: \\n, \\x1b, \\u202e', function () {
    assert.equal(shownText('f\u202egnp.exe'), 'f\\u202egnp.exe')
    assert.equal(shownText('a\nb\r\tc\x00\x1b\x7f\x85'), 'a\\nb\\r\\tc\\x00\\x1b\\x7f\\x85')
    assert.equal(shownText('\ufeff\u2066\u061c\ud800'), '\\ufeff\\u2066\\u061c\\ud800')
    for (const name of HOSTILE) {
      for (const [format, escape] of [['text', shownText], ['xml', xmlText], ['html', htmlText], ['csv', csvField]]) {
        assertNoneRaw(escape(name), name, format)
        assert.ok(!LINE_BREAKS.test(escape(name)), `${format} keeps one line for ${JSON.stringify(name)}`)
      }
    }
  })

  it('gives XML, HTML and CSV the text form\'s escapes, and their own on top', function () {
    assert.equal(xmlText('f\u202e<b>&"\''), 'f\\u202e&lt;b&gt;&amp;&quot;&apos;')
    assert.equal(htmlText('f\u202e<b>&"\''), 'f\\u202e&lt;b&gt;&amp;&quot;&#39;')
    assert.equal(csvField('=1+1\n"x",y'), '"\'=1+1\\n""x"",y"')
    assert.equal(csvField(12.5), '12.5')
  })

  it('writes JSON that reads back as it was, with no raw bidi mark or control character in its text', function () {
    for (const name of HOSTILE) {
      const text = jsonText({ name }, 2)
      assertNoneRaw(text, name, 'json')
      assert.deepEqual(JSON.parse(text), { name })
    }
  })

  it('the text card: no name starts a line of its own, none shows raw', function () {
    for (const name of HOSTILE) {
      const card = hostileCard(name)
      const text = formatCard(card)
      assertNoneRaw(text, name, 'text card')
      const forged = text.split('\n').filter(function forged (l) { return /^PASS {2}memory {2}forged|^PASS {2}18/.test(l) })
      assert.deepEqual(forged, [], `a forged PASS line from ${JSON.stringify(name)}`)
      assert.match(text, new RegExp(`line: .*${escapeRegExp(shownText(name))}\\.js:12 in `))
    }
  })

  it('the --json card: each name reads back whole, none raw in the file', function () {
    for (const name of HOSTILE) {
      const text = jsonText(cardJson(hostileCard(name)), 2)
      assertNoneRaw(text, name, 'json card')
      const doc = JSON.parse(text)
      assert.equal(doc.memorySites.lines[0].functionName, name)
      assert.equal(doc.handler, `students/${name}/handler.js`)
    }
  })

  it('JUnit: well-formed for a strict reader, a failure\'s lines the writer\'s alone, no name raw', function () {
    for (const name of HOSTILE) {
      const xml = junitXml(hostileCard(name))
      assertNoneRaw(xml, name, 'junit')
      const root = readXml(xml)
      const [failure] = elementsNamed(root, 'failure')
      const lines = failure.text.split('\n')
      const labels = lines.map(function label (l) { return l.split(':')[0] })
      assert.deepEqual(labels, ['figure', 'limit', 'why', 'line', 'sites', 'hint'], JSON.stringify(name))
      const figures = '160.0 MiB allocated (heap), 50 % of the 320.0 MiB its lines allocated'
      assert.equal(lines[3], `line: ${shownText(name)}.js:12 in ${shownText(name)}: ${figures} · ${shownText(`const x = '${name}'`)}`)
      assertNoneRaw(failure.text, name, 'junit failure read back')
      assert.equal(elementsNamed(root, 'testcase').length, hostileCard(name).checks.length, 'no case forged by a name')
      assert.equal(root.attributes.name, `streamlab grade: ${shownText(`students/${name}/handler.js`)}`)
    }
  })

  it('the class table: the CSV reads back a row per student, the name escaped; the HTML holds no name raw', async function () {
    const dir = path.join('test-data', 'escape-formats')
    fs.rmSync(dir, { recursive: true, force: true })
    const rows = HOSTILE.map(function row (name) {
      const card = hostileCard(name)
      card.loadError = `threw ${name}`
      return rowOf({ name, path: `class/${name}` }, card, 'ab'.repeat(32))
    })
    const startedAt = '2026-11-27T10:00:00.000Z'
    const table = { folder: 'class', seed: 7, preset: 'quick', startedAt, labVersion: '0.1.0', command: null, rows }
    await writeTable(table, path.join(dir, 'class.csv'), path.join(dir, 'class.html'))
    const csv = fs.readFileSync(path.join(dir, 'class.csv'), 'utf8')
    const read = parseCsv(csv)
    assert.equal(read.length, HOSTILE.length + 1, 'a header and a row per student')
    const html = fs.readFileSync(path.join(dir, 'class.html'), 'utf8')
    HOSTILE.forEach(function held (name, k) {
      assertNoneRaw(csv, name, 'csv')
      assertNoneRaw(html, name, 'html')
      assert.equal(read[k + 1][0], shownText(name).replace(/^[=+\-@]/, "'$&"))
      assert.ok(html.includes(htmlText(name)), `the page names ${JSON.stringify(name)} escaped`)
    })
  })

  it('an exported run page: the record in its source holds no name raw, and reads back whole', function () {
    for (const name of HOSTILE) {
      const { record } = makeSitesRecord({ id: 'hostile-names', functionName: name })
      const page = embedRecord(`<body>${emptyRecordElement()}</body>`, record)
      assertNoneRaw(page, name, 'run page')
      const json = page.slice(page.indexOf('>', page.indexOf('<script')) + 1, page.lastIndexOf('</script>'))
      assert.deepEqual(JSON.parse(json), record)
    }
  })
})

function escapeRegExp (text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
