/**
 * Code quoted in the docs is the code that runs. A quote is a fenced code
 * block right under a marker line naming a file and a function in it:
 *
 *   <!-- quote: lib/ingest/buffered.js ingestBuffered -->
 *   ```js
 *   export async function ingestBuffered (req, plan, { reservation }, { opts }) {
 *   // ...
 *   }
 *   ```
 *
 * The function runs from the line that declares it (`function NAME (`,
 * with `export`, `async` or `*` as may be) to the first line after it that
 * closes it at the declaration's indentation (`}`). The block is that
 * source, line for line, character for character, except where a line
 * reading `// ...` (any indentation) stands for one or more lines left
 * out. The lines between two `// ...` are a run of the function's lines as
 * they are, in the function's order; a block that does not start with
 * `// ...` starts at the declaration, and one that does not end with it ends
 * at the closing brace. So a quote fails as soon as a line it shows changes,
 * moves or goes; a change within lines it leaves out does not fail it.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DOCS = path.join(ROOT, 'docs')
const MARKER = /^<!-- quote: (\S+) (\S+) -->$/
const FENCE = /^```/
const ELISION = /^\s*\/\/ \.\.\.$/

/** Every Markdown file under docs/, as paths from the repository's root. */
function markdownFiles () {
  return fs.readdirSync(DOCS, { recursive: true })
    .filter(function markdown (name) { return name.endsWith('.md') })
    .map(function fromRoot (name) { return path.join('docs', name) })
    .sort()
}

/**
 * The quote markers of a Markdown text, each with the code block under it.
 * @returns {Array<{ line: number, file: string, name: string, lines: string[]|null }>}
 *   `line` is the marker's (1-based); `lines` is null when no fenced block follows the marker at once
 */
function findQuotes (markdown) {
  const lines = markdown.split('\n')
  const quotes = []
  for (let k = 0; k < lines.length; k++) {
    const marker = MARKER.exec(lines[k])
    if (marker === null) continue
    const quote = { line: k + 1, file: marker[1], name: marker[2], lines: null }
    if (FENCE.test(lines[k + 1] ?? '')) {
      const end = lines.findIndex(function closingFence (line, at) { return at > k + 1 && line === '```' })
      if (end !== -1) quote.lines = lines.slice(k + 2, end)
    }
    quotes.push(quote)
  }
  return quotes
}

function escapeRegExp (text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * The source lines of function `name` in a JavaScript text, from its declaration to its closing brace.
 * @throws {Error} when it is declared nowhere, more than once, or never closed
 */
function functionSource (source, name) {
  const lines = source.split('\n')
  const declaration = new RegExp(`^(\\s*)(?:export\\s+)?(?:default\\s+)?(?:async\\s+)?function\\s*\\*?\\s*${escapeRegExp(name)}\\s*\\(`)
  const starts = []
  for (let k = 0; k < lines.length; k++) if (declaration.test(lines[k])) starts.push(k)
  if (starts.length === 0) throw new Error(`no function ${name} is declared there`)
  if (starts.length > 1) throw new Error(`function ${name} is declared ${starts.length} times there (lines ${starts.map(function oneBased (k) { return k + 1 }).join(', ')})`)
  const start = starts[0]
  const closing = `${declaration.exec(lines[start])[1]}}`
  const end = lines.findIndex(function closes (line, at) { return at > start && line === closing })
  if (end === -1) throw new Error(`function ${name} (line ${start + 1}) has no closing "${closing}"`)
  return lines.slice(start, end + 1)
}

/** Where `run` occurs as consecutive lines of `lines` from `from` on, or -1. */
function findRun (lines, run, from) {
  for (let at = from; at + run.length <= lines.length; at++) {
    if (run.every(function same (line, k) { return lines[at + k] === line })) return at
  }
  return -1
}

/**
 * Why a quote is not the function's source, or null when it is.
 * @param {string[]} quoted the code block's lines
 * @param {string[]} source the function's lines (functionSource)
 * @returns {string|null}
 */
function quoteMismatch (quoted, source) {
  const runs = [[]]
  for (const line of quoted) {
    if (ELISION.test(line)) runs.push([])
    else runs[runs.length - 1].push(line)
  }
  if (runs.length === 1) {
    // nothing left out: the whole function, exactly
    const k = quoted.findIndex(function differs (line, at) { return line !== source[at] })
    if (k === -1 && quoted.length === source.length) return null
    if (k === -1) return `the quote ends at line ${quoted.length} of ${source.length}: the function goes on with ${JSON.stringify(source[quoted.length])}`
    return `line ${k + 1} of the quote is ${JSON.stringify(quoted[k])}, the function's is ${JSON.stringify(source[k] ?? '(nothing: the function has ended)')}`
  }
  const first = runs[0]
  const last = runs[runs.length - 1]
  if (first.length > 0 && findRun(source, first, 0) !== 0) return `the quote's first lines are not the function's first lines (${JSON.stringify(first[0])} against ${JSON.stringify(source[0])})`
  if (last.length > 0 && findRun(source, last, source.length - last.length) !== source.length - last.length) {
    return `the quote's last lines are not the function's last lines (${JSON.stringify(last[last.length - 1])} against ${JSON.stringify(source[source.length - 1])})`
  }
  let next = first.length
  for (let r = 1; r < runs.length; r++) {
    const run = runs[r]
    const lastRun = r === runs.length - 1
    // `// ...` leaves out one line at least: the run starts after `next`
    const at = lastRun && run.length > 0 ? source.length - run.length : findRun(source, run, next + 1)
    if (run.length === 0) {
      if (lastRun) return next < source.length ? null : 'the quote ends with "// ..." but leaves nothing out there'
      return `"// ..." twice in a row (after line ${next} of the function) leaves out nothing between them`
    }
    if (at < next + 1 || findRun(source, run, at) !== at) {
      return `${JSON.stringify(run[0])} and the ${run.length - 1} line(s) after it are not in the function as they are, in order, after at least one line left out by "// ..."`
    }
    next = at + run.length
  }
  return null
}

describe('code quoted in the docs', function () {
  const quotes = markdownFiles().flatMap(function quotesOf (doc) {
    return findQuotes(fs.readFileSync(path.join(ROOT, doc), 'utf8')).map(function located (quote) { return { doc, ...quote } })
  })

  it('the ingest lesson quotes /bad and the textbook streaming route from their files', function () {
    const lesson = quotes.filter(function inLesson (q) { return q.doc === path.join('docs', 'lessons', 'ingest.md') })
    const named = lesson.map(function label (q) { return `${q.file} ${q.name}` })
    assert.ok(named.includes('lib/ingest/sequence.js ingest'), named.join('; '))
    assert.ok(named.includes('lib/ingest/buffered.js ingestBuffered'), named.join('; '))
    assert.ok(named.includes('lib/ingest/streamparser.js ingestWithStreamparser'), named.join('; '))
  })

  for (const quote of quotes) {
    it(`${quote.doc}:${quote.line} quotes ${quote.name} as ${quote.file} has it`, function () {
      assert.ok(quote.lines !== null, `the marker at ${quote.doc}:${quote.line} must be followed at once by a fenced code block`)
      const file = path.join(ROOT, quote.file)
      assert.ok(fs.existsSync(file), `${quote.file} does not exist`)
      const source = functionSource(fs.readFileSync(file, 'utf8'), quote.name)
      const mismatch = quoteMismatch(quote.lines, source)
      assert.equal(mismatch, null, `${quote.doc}:${quote.line}, ${quote.file} ${quote.name}: ${mismatch}`)
    })
  }
})

describe('how a quote is compared with the code', function () {
  const CODE = [
    '/** A doc comment is not part of the function. */',
    'export async function sum (a, b) {',
    '  const x = a + 1',
    '  const y = b + 1',
    '  if (x > y) {',
    '    return x',
    '  }',
    '  return x + y',
    '}',
    '',
    'function other () {',
    '  return 0',
    '}'
  ].join('\n')
  const SOURCE = functionSource(CODE, 'sum')

  it('takes a function from its declaration to the brace that closes it at the same indentation', function () {
    assert.deepEqual(SOURCE, CODE.split('\n').slice(1, 9))
    assert.deepEqual(functionSource(CODE, 'other'), ['function other () {', '  return 0', '}'])
  })

  it('fails a function declared nowhere, or twice', function () {
    assert.throws(function missing () { functionSource(CODE, 'total') }, /no function total/)
    assert.throws(function twice () { functionSource(`${CODE}\nfunction other () {\n}`, 'other') }, /declared 2 times/)
  })

  it('passes the whole function, exactly', function () {
    assert.equal(quoteMismatch(SOURCE, SOURCE), null)
  })

  it('fails a quote one character off, one line short, or one line long', function () {
    assert.match(quoteMismatch(SOURCE.map(function edit (line) { return line.replace('a + 1', 'a + 2') }), SOURCE), /line 2 of the quote/)
    assert.match(quoteMismatch(SOURCE.slice(0, -1), SOURCE), /the function goes on/)
    assert.match(quoteMismatch([...SOURCE, '// more'], SOURCE), /line 9 of the quote/)
  })

  it('lets a line "// ..." stand for one or more lines left out, the lines it shows being the function\'s, in order', function () {
    assert.equal(quoteMismatch([SOURCE[0], '  // ...', SOURCE[6], SOURCE[7]], SOURCE), null)
    assert.equal(quoteMismatch([SOURCE[0], SOURCE[1], '// ...', SOURCE[4], SOURCE[5], '// ...', SOURCE[7]], SOURCE), null)
    assert.equal(quoteMismatch(['// ...', SOURCE[3], '// ...'], SOURCE), null)
  })

  it('fails an elided quote whose shown lines changed, moved, or do not start and end where the function does', function () {
    assert.match(quoteMismatch([SOURCE[0], '// ...', '  return x - y', SOURCE[7]], SOURCE), /last lines/)
    assert.match(quoteMismatch([SOURCE[0], '// ...', SOURCE[3], '// ...', SOURCE[2], '// ...', SOURCE[7]], SOURCE), /not in the function as they are, in order/)
    assert.match(quoteMismatch([SOURCE[1], '// ...', SOURCE[7]], SOURCE), /first lines/)
    assert.match(quoteMismatch([SOURCE[0], '// ...', SOURCE[6]], SOURCE), /last lines/)
  })

  it('fails "// ..." that leaves nothing out', function () {
    assert.match(quoteMismatch([SOURCE[0], '// ...', ...SOURCE.slice(1)], SOURCE), /not in the function as they are/)
    assert.match(quoteMismatch([SOURCE[0], '// ...', '// ...', SOURCE[7]], SOURCE), /twice in a row/)
    assert.match(quoteMismatch([...SOURCE, '// ...'], SOURCE), /leaves nothing out/)
  })

  it('finds a marker\'s code block only right under it', function () {
    const [quoted, loose] = findQuotes([
      '<!-- quote: lib/a.js sum -->', '```js', 'function sum () {', '}', '```', '',
      '<!-- quote: lib/a.js other -->', '', '```js', 'function other () {', '}', '```'
    ].join('\n'))
    assert.deepEqual(quoted, { line: 1, file: 'lib/a.js', name: 'sum', lines: ['function sum () {', '}'] })
    assert.equal(loose.lines, null)
  })
})
