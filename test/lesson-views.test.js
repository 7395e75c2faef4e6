/**
 * The lesson views' words (dashboard/lessons.js) against the lesson pages (docs/lessons/): each
 * question on the view is the lesson page's, word for word, each lesson page that runs an
 * experiment has a view and links to it near its top, and each view runs an experiment the lab
 * has. The views in a browser: test/slow/dashboard-lessons.test.js.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { LESSONS, findLesson } from '../dashboard/lessons.js'
import { EXPERIMENTS } from '../experiments/index.js'
import { ROOT, readPage } from './markdown.js'

const LESSON_DIR = path.join(ROOT, 'docs', 'lessons')
/** The lesson pages that run no experiment of the lab's: they need no view. */
const NO_EXPERIMENT = Object.freeze(['grade'])

/** A lesson page's "The question" section as a reader sees it: no code marks, links as their text, one space. */
function questionSection (name) {
  const page = readPage(path.join('docs', 'lessons', `${name}.md`))
  const section = /^## The question\n([\s\S]*?)^## /m.exec(page)
  assert.ok(section, `docs/lessons/${name}.md has no "## The question" section`)
  return section[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '').replace(/\s+/g, ' ')
}

describe('the lesson views', function () {
  const pages = fs.readdirSync(LESSON_DIR).filter(function isPage (f) { return f.endsWith('.md') })
    .map(function name (f) { return f.slice(0, -3) })

  it('has a view for every lesson page that runs an experiment, and no other', function () {
    assert.deepEqual(Object.keys(LESSONS).sort(), pages.filter(function runs (p) { return !NO_EXPERIMENT.includes(p) }).sort())
  })

  for (const [name, lesson] of Object.entries(LESSONS)) {
    describe(`/?lesson=${name}`, function () {
      it('asks the lesson page\'s question, in one sentence, word for word', function () {
        assert.match(lesson.question, /^[A-Z][^?]*\?$/, 'one sentence, one question mark at its end')
        assert.ok(questionSection(name).includes(lesson.question), `"${lesson.question}" is not in docs/lessons/${name}.md's question`)
      })

      it('runs an experiment the lab has', function () {
        assert.ok(Object.hasOwn(EXPERIMENTS, lesson.experiment), lesson.experiment)
      })

      it('is linked from the top of its lesson page', function () {
        const top = readPage(path.join('docs', 'lessons', `${name}.md`)).split('\n').slice(0, 6).join('\n')
        assert.ok(top.includes(`(http://127.0.0.1:3000/?lesson=${name})`) || top.includes(`<http://127.0.0.1:3000/?lesson=${name}>`), top)
      })
    })
  }

  it('names an unknown lesson as unknown, and no lesson as the full page', function () {
    assert.deepEqual(findLesson('no-such-lesson'), { name: 'no-such-lesson', unknown: true })
    assert.equal(findLesson(null), null)
    assert.equal(findLesson('ingest').lesson, LESSONS.ingest)
    // a name from Object.prototype is no lesson
    assert.equal(findLesson('toString').unknown, true)
  })
})
