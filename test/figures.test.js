/**
 * Every figure the docs quote is the figure in its results file (docs/figures/README.md): a link
 * `[2370.6 MiB](../figures/ingest-500mb.json#cells/route=bad/peakAboveIdle|1048576)` must show the
 * value at that path, rounded as the text rounds it; a page that quotes a file names its command,
 * date and Node; and in the README and the lessons no measured figure stands without such a link.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { ROOT, markdownFiles, readPage, linksOf, proseLines } from './markdown.js'

const FIGURES = 'docs/figures'

/**
 * The value at a fragment of a figures file: `a/b/k=v,k2=v2/c`, `A~B` for A over B, `|N` to divide by N.
 * @throws {Error} naming the segment that matches nothing
 */
export function valueAt (data, fragment) {
  const [paths, divisor] = fragment.split('|')
  const [numerator, denominator] = paths.split('~').map(function resolve (p) { return walk(data, p) })
  let value = denominator === undefined ? numerator : numerator / denominator
  if (divisor !== undefined) {
    if (!(Number(divisor) > 0)) throw new Error(`"|${divisor}" is no divisor`)
    value /= Number(divisor)
  }
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error(`${fragment} is ${JSON.stringify(value)}, not a number`)
  return value
}

function walk (data, route) {
  let at = data
  for (const segment of decodeURIComponent(route).split('/').filter(Boolean)) {
    if (segment.includes('=')) {
      if (!Array.isArray(at)) throw new Error(`"${segment}" picks from an array, and ${route} has none there`)
      const wanted = segment.split(',').map(function pair (kv) { return kv.split('=') })
      const found = at.filter(function matches (item) {
        return wanted.every(function same ([k, v]) { return item !== null && typeof item === 'object' && String(item[k]) === v })
      })
      if (found.length !== 1) throw new Error(`"${segment}" in ${route} matches ${found.length} elements, not one`)
      at = found[0]
    } else {
      if (at === null || typeof at !== 'object' || !(segment in at)) throw new Error(`"${segment}" of ${route} is not there`)
      at = at[segment]
    }
  }
  return at
}

/** The figure a link's text shows: its first number, and the decimals it is rounded to. */
export function quotedFigure (text) {
  const m = /-?\d[\d,]*(?:\.(\d+))?/.exec(text)
  if (m === null) return null
  return { value: Number(m[0].replaceAll(',', '')), decimals: m[1]?.length ?? 0, text: m[0] }
}

/** Whether a quoted figure is the file's value rounded as the quote rounds it. */
export function sameFigure (quoted, value) {
  return Math.abs(Number(value.toFixed(quoted.decimals)) - quoted.value) < 1e-9
}

// a measured figure in prose: a decimal, or a number before x, ×, %, ms, req/s or MiB/s
const MEASURED = /(?<![\w.#/-])-?\d[\d,]*(?:\.\d+)?\s?(?:x\b|×|%|ms\b|req\/s|MiB\/s|MB\/s)|(?<![\w.#/-])\d[\d,]*\.\d+(?![\d.])/g

/**
 * The measured figures of a page's prose that are no link: in links, in code and in headings' anchors
 * numbers are not counted.
 * @returns {Array<{ line: number, figure: string }>}
 */
export function unlinkedFigures (markdown) {
  const found = []
  proseLines(markdown).forEach(function read (line, k) {
    const bare = line
      .replace(/!?\[(?:[^\]\\]|\\.)*\]\([^)]*\)/g, function blank (link) { return ' '.repeat(link.length) })
      .replace(/<[^>]+>/g, function blank (tag) { return ' '.repeat(tag.length) })
      .replace(/https?:\/\/\S+/g, '')
      .replace(/\b(?:Node(?:\.js)?\s*(?:>=\s*)?|v|@)\d+(?:\.\d+)+/gi, '')
    for (const m of bare.matchAll(MEASURED)) found.push({ line: k + 1, figure: m[0].trim() })
  })
  return found
}

function figureLinks (file) {
  return linksOf(readPage(file))
    .map(function resolved (link) {
      const [target, fragment] = link.dest.split('#')
      const to = path.posix.normalize(path.posix.join(path.posix.dirname(file), target))
      return { ...link, to, fragment }
    })
    .filter(function intoFigures (link) { return link.to.startsWith(`${FIGURES}/`) && link.to.endsWith('.json') })
}

const cache = new Map()
function figuresFile (rel) {
  if (!cache.has(rel)) {
    const file = path.join(ROOT, rel)
    cache.set(rel, fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : null)
  }
  return cache.get(rel)
}

describe('the figures the docs quote', function () {
  const pages = markdownFiles({ generated: false })

  it('each figure link shows the value of its file', function () {
    const problems = []
    for (const page of pages) {
      for (const link of figureLinks(page)) {
        const where = `${page}:${link.line}`
        const data = figuresFile(link.to)
        if (data === null) { problems.push(`${where}: ${link.to} is not there (make it with its command, docs/figures/README.md)`); continue }
        if (!link.fragment) continue
        const quoted = quotedFigure(link.text)
        if (quoted === null) { problems.push(`${where}: "${link.text}" shows no figure`); continue }
        let value
        try { value = valueAt(data, link.fragment) } catch (err) { problems.push(`${where}: ${err.message}`); continue }
        if (!sameFigure(quoted, value)) problems.push(`${where}: quotes ${quoted.text}, ${link.to} says ${value.toFixed(quoted.decimals)} (${value})`)
      }
    }
    assert.deepEqual(problems, [])
  })

  it('a page that quotes a figures file names its command, its date and its Node', function () {
    const problems = []
    for (const page of pages) {
      const text = readPage(page)
      for (const file of new Set(figureLinks(page).map(function target (link) { return link.to }))) {
        const data = figuresFile(file)
        if (data === null) continue
        if (!text.includes(`\`${data.command}\``)) problems.push(`${page}: quotes ${file} but does not give its command \`${data.command}\``)
        if (data.date && !text.includes(data.date)) problems.push(`${page}: quotes ${file} but does not give its date ${data.date}`)
        const node = `Node ${data.machine?.node?.replace(/^v/, '')}`
        if (!text.includes(node)) problems.push(`${page}: quotes ${file} but does not give its machine's ${node}`)
      }
    }
    assert.deepEqual(problems, [])
  })

  it('the README and the lessons quote no measured figure without its file', function () {
    const problems = []
    for (const page of pages.filter(function quoting (p) { return p === 'README.md' || p.startsWith('docs/lessons/') })) {
      for (const { line, figure } of unlinkedFigures(readPage(page))) problems.push(`${page}:${line}: ${figure}`)
    }
    assert.deepEqual(problems, [], 'a measured figure must link its figures file (docs/figures/README.md)')
  })

  it('every figures file records its command, date and machine', function () {
    const dir = path.join(ROOT, FIGURES)
    // NAME.run.json is the run's record, beside its figures: test/runs-lessons.test.js reads those
    for (const name of fs.readdirSync(dir).filter(function json (f) { return f.endsWith('.json') && !f.endsWith('.run.json') })) {
      const data = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'))
      assert.match(data.command ?? '', /^npm run /, `${name}: its command`)
      assert.match(data.date ?? '', /^\d{4}-\d{2}-\d{2}$/, `${name}: its date`)
      assert.ok(data.machine?.cpus > 0 && data.machine?.memoryGiB > 0 && /^v\d+/.test(data.machine?.node ?? ''), `${name}: its machine`)
    }
  })

  describe('how a quote is read', function () {
    const data = { cells: [{ route: 'bad', size: '500MB', peak: 2485796864 }, { route: 'good', size: '500MB', peak: 39845888 }] }

    it('walks names, indices and key=value picks, ratios and divisors', function () {
      assert.equal(valueAt(data, 'cells/route=good,size=500MB/peak|1048576'), 38)
      assert.equal(valueAt(data, 'cells/1/peak'), 39845888)
      assert.equal(Math.round(valueAt(data, 'cells/route=bad/peak~cells/route=good/peak')), 62)
    })

    it('names what it cannot find', function () {
      assert.throws(function () { valueAt(data, 'cells/route=ugly/peak') }, /matches 0 elements/)
      assert.throws(function () { valueAt(data, 'cells/size=500MB/peak') }, /matches 2 elements/)
      assert.throws(function () { valueAt(data, 'rows/route=bad') }, /"rows" of rows\/route=bad is not there/)
    })

    it('rounds as the text rounds', function () {
      assert.equal(sameFigure(quotedFigure('2370.6 MiB'), 2370.63), true)
      assert.equal(sameFigure(quotedFigure('2371 MiB'), 2370.63), true)
      assert.equal(sameFigure(quotedFigure('2,370.6 MiB'), 2370.63), true)
      assert.equal(sameFigure(quotedFigure('2380.5 MiB'), 2370.63), false)
      assert.equal(quotedFigure('? MiB'), null)
    })

    it('finds a measured figure that links nothing, and leaves parameters and linked ones alone', function () {
      const page = [
        '/bad peaked at 2370.6 MiB, /good is 62x leaner and 12 % faster at 85 req/s.',
        'A 500 MB body, 64 KiB reads, 200 uploads, [37.6 MiB](../figures/x.json#a) linked, Node 20.19.',
        '```', 'peak 99.9 MiB in code', '```', 'and `7.5 ms` in inline code'
      ].join('\n')
      assert.deepEqual(unlinkedFigures(page).map(function shown (f) { return f.figure }), ['2370.6', '62x', '12 %', '85 req/s'])
    })
  })
})
