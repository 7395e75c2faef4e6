/**
 * The lessons' runs: the record of the run a committed figures file came from, kept beside it as docs/figures/<name>.run.json by
 * `npm run bench -- ... --figures <name>`, and listed by every lab as the read-only run `lesson-<name>`, so a lesson links its
 * figure to the run's replay (`/?run=lesson-zip-bomb`) and a class lays its own run over the lesson's (docs/runs.md).
 * More: README.md, "lessons.js".
 */
import fs from 'node:fs'
import path from 'node:path'
import { Readable } from 'node:stream'
import { runNotFound } from '../errors/index.js'
import { writeAtomically } from '../util/atomic-file.js'
import { PROJECT_ROOT } from '../util/project-root.js'
import { RECORD_MAX_BYTES, oversize, readRunRecord } from './format.js'
import { recordText } from './record.js'
import { invalidEntry, namesIn, readRecordFile, summarise } from './store.js'
import { thinGcEvents, thinSamples, thinSpans } from './timeline.js'
import { thinWindows } from './sites.js'

/** Where the lessons' runs are: beside the figures files they came from. */
export const LESSON_RUNS_DIR = path.join(PROJECT_ROOT, 'docs', 'figures')

/** A lesson run's id: this, then its figures file's name. */
export const LESSON_PREFIX = 'lesson-'

/** The largest lesson record: it is committed, and a lesson's page links it. */
export const LESSON_RECORD_MAX_BYTES = 1024 * 1024

/** A figures file's name, as `--figures` takes it. */
const FIGURES_NAME = /^[a-z0-9][a-z0-9-]*$/
const SUFFIX = '.run.json'

/**
 * A record as a lesson keeps it: its id `lesson-<name>`, its timeline thinned to fit LESSON_RECORD_MAX_BYTES (what was left out
 * added to `timeline.thinned`), as text.
 */
export function lessonRecordText (record, name) {
  if (!FIGURES_NAME.test(name)) throw new TypeError(`a figures name is lower-case letters, digits and dashes, not "${name}"`)
  const { samples, spans, gc, siteWindows } = record.timeline
  return recordText(function build (bounds) {
    const kept = { samples: thinSamples(samples, Math.max(5, bounds.maxSamples ?? samples.length)),
      spans: thinSpans(spans, bounds.maxSpans ?? spans.length) }
    if (gc !== undefined) kept.gc = thinGcEvents(gc, bounds.maxGcEvents ?? gc.length)
    // the routes' summary (timeline.sites) is of every window the run saw: it stays as it is
    if (siteWindows !== undefined) kept.siteWindows = thinWindows(siteWindows, bounds.maxSiteWindows ?? siteWindows.length)
    const thinned = { ...record.timeline.thinned }
    for (const key of Object.keys(kept)) {
      if (kept[key].length < record.timeline[key].length) {
        thinned[key] = { seen: record.timeline.thinned?.[key]?.seen ?? record.timeline[key].length, kept: kept[key].length }
      }
    }
    return {
      ...record,
      id: `${LESSON_PREFIX}${name}`,
      timeline: { ...record.timeline, ...kept, thinned: Object.keys(thinned).length === 0 ? null : thinned }
    }
  }, LESSON_RECORD_MAX_BYTES)
}

/** Keep the record a run left in `file` beside the figures it gave, `<dir>/<name>.run.json`, atomically (run.invalid: no record). */
export async function keepLessonRecord (file, name, dir = LESSON_RUNS_DIR) {
  const stat = await fs.promises.stat(file)
  if (stat.size > RECORD_MAX_BYTES) throw new Error(`${file} ${oversize(stat.size)}`)
  const text = lessonRecordText(readRunRecord(await fs.promises.readFile(file), file), name)
  return (await writeAtomically(dir, `${name}${SUFFIX}`, [Readable.from([text])])).path
}

/** The lessons' runs, read-only: listed and read as the runs folder's are (store.js), never written or pruned by a lab. */
export function createLessonRuns ({ dir = LESSON_RUNS_DIR } = {}) {
  const folder = path.resolve(dir)

  /** The file of a lesson id, or null for an id that is no lesson's. */
  function fileOf (id) {
    if (typeof id !== 'string' || !id.startsWith(LESSON_PREFIX)) return null
    const name = id.slice(LESSON_PREFIX.length)
    return FIGURES_NAME.test(name) ? path.join(folder, `${name}${SUFFIX}`) : null
  }

  async function read (id) {
    const file = fileOf(id)
    if (file === null) throw runNotFound(id, 0)
    return readRecordFile(file, id, 0)
  }

  /** The lessons' runs as GET /runs lists a run, each marked `lesson: true`; a file that is no record as `{ id, bytes, invalid }`. */
  async function list () {
    const out = []
    for (const name of (await namesIn(folder)).filter(function isRun (n) { return n.endsWith(SUFFIX) }).sort()) {
      const id = `${LESSON_PREFIX}${name.slice(0, -SUFFIX.length)}`
      if (fileOf(id) === null) continue
      let bytes = 0
      try {
        bytes = (await fs.promises.stat(path.join(folder, name))).size
        out.push({ ...summarise(id, await read(id), bytes), lesson: true })
      } catch (err) {
        // gone between the listing and the read: nothing to list
        if (err?.type === 'run.not.found' || err?.code === 'ENOENT') continue
        out.push({ ...invalidEntry(id, bytes, err), lesson: true })
      }
    }
    return out
  }

  return Object.freeze({ dir: folder, list, read, has: function has (id) { return fileOf(id) !== null } })
}
