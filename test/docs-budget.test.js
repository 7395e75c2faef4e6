/**
 * The docs' word budget (test/README.md, "The docs' word budget"): a page that gains loses elsewhere.
 *
 * - A word is what `wc -w` counts: a run of characters between ASCII whitespace.
 * - The docs are README.md and every Markdown page under docs/, less docs/figures/ (the benches write
 *   it). Together at most DOCS_WORD_LIMIT words, every word counted, code and tables included, so
 *   the figure is the one a reader gets from
 *   `cat README.md docs/*.md docs/lessons/*.md | wc -w`.
 * - A lesson (docs/lessons/*.md) is five minutes: at most LESSON_PROSE_LIMIT words of prose, the words
 *   outside fenced code blocks (tables, inline code and markers count; the quoted code does not).
 */
import assert from 'node:assert/strict'
import { markdownFiles, readPage, proseLines } from './markdown.js'

/** README.md and docs/ without docs/figures/, in words as `wc -w` counts them. */
export const DOCS_WORD_LIMIT = 41500
/** One lesson's prose, in words outside fenced code. */
export const LESSON_PROSE_LIMIT = 1000

/** The words of a text, as `wc -w` counts them. */
export function countWords (text) {
  return text.split(/[ \t\n\r\f\v]+/).filter(Boolean).length
}

/** The words of a Markdown page outside its fenced code blocks. */
export function proseWords (markdown) {
  return countWords(proseLines(markdown, { keepInlineCode: true }).join('\n'))
}

/**
 * What passes the budget, one sentence each.
 * @param {Array<{ file: string, text: string }>} pages the budgeted pages, lessons among them
 */
export function budgetProblems (pages, { docsLimit = DOCS_WORD_LIMIT, lessonLimit = LESSON_PROSE_LIMIT } = {}) {
  const problems = []
  for (const { file, text } of pages) {
    if (!isLesson(file)) continue
    const words = proseWords(text)
    if (words > lessonLimit) problems.push(`${file} has ${words} words of prose, over the lesson's ${lessonLimit}`)
  }
  const counted = pages.map(function count ({ file, text }) { return { file, words: countWords(text) } })
  const total = counted.reduce(function sum (n, page) { return n + page.words }, 0)
  if (total > docsLimit) {
    const largest = counted.sort(function byWords (a, b) { return b.words - a.words }).slice(0, 5)
      .map(function named ({ file, words }) { return `${file} ${words}` }).join(', ')
    problems.push(`README.md and docs/ have ${total} words, over the budget of ${docsLimit} (largest: ${largest})`)
  }
  return problems
}

function isLesson (file) {
  return /^docs\/lessons\/[^/]+\.md$/.test(file)
}

/** The pages the budget counts: README.md and docs/**\/*.md, without docs/figures/. */
function budgetedPages () {
  return markdownFiles()
    .filter(function counted (file) { return file === 'README.md' || (file.startsWith('docs/') && !file.startsWith('docs/figures/')) })
    .map(function read (file) { return { file, text: readPage(file) } })
}

describe('the docs\' word budget', function () {
  it('README.md and docs/ (less docs/figures/) stay within the budget, and each lesson\'s prose within its own', function () {
    const pages = budgetedPages()
    assert.ok(pages.some(function lesson ({ file }) { return isLesson(file) }), 'the lessons are counted')
    assert.deepEqual(budgetProblems(pages), [])
  })

  describe('how the words are counted', function () {
    it('counts as wc -w does: runs between spaces, tabs and newlines, punctuation and code included', function () {
      assert.equal(countWords(''), 0)
      assert.equal(countWords('  one\ttwo\n\nthree  `four()` | five |\n'), 7)
    })

    it('leaves a lesson\'s fenced code out of its prose, and keeps its tables and inline code', function () {
      const page = ['# A lesson', '', 'Run `npm test` now.', '', '```js', 'const a = 1', '```', '', '| a | b |', '', '~~~', 'ignored words', '~~~'].join('\n')
      assert.equal(proseWords(page), 3 + 4 + 5)
    })

    it('names a lesson whose prose is too long, with its count and the limit', function () {
      const code = '```js\n' + 'x '.repeat(5000) + '\n```\n'
      const fits = { file: 'docs/lessons/fits.md', text: code + 'word '.repeat(1000) }
      const long = { file: 'docs/lessons/long.md', text: 'word '.repeat(1001) }
      const reference = { file: 'docs/reference.md', text: 'word '.repeat(3000) }
      assert.deepEqual(budgetProblems([fits, long, reference], { docsLimit: 100000 }),
        ['docs/lessons/long.md has 1001 words of prose, over the lesson\'s 1000'])
    })

    it('names the docs\' total, the limit and the largest pages when they pass the budget', function () {
      const pages = [{ file: 'README.md', text: 'a '.repeat(60) }, { file: 'docs/api.md', text: 'b '.repeat(41) }]
      assert.deepEqual(budgetProblems(pages, { docsLimit: 101 }), [])
      assert.deepEqual(budgetProblems(pages, { docsLimit: 100 }),
        ['README.md and docs/ have 101 words, over the budget of 100 (largest: README.md 60, docs/api.md 41)'])
    })
  })
})
