/**
 * Records a hostile tester writes, each as the text of a file (test/runs-hostile.test.js, and
 * test/slow/runs-hostile.test.js in Chromium): each passes every rule of lib/runs/check.js but
 * one, the one a reader would otherwise fall over. Built as text: a value nested 200,000 deep is
 * past what JSON.stringify can write, and a key `__proto__` is past what an object literal keeps.
 */
import { makeBusyRecord, makeTestRecord } from './runs-helpers.js'

/** Nesting past any stack: JSON.parse reads it, a reader that recurses does not. */
export const DEEP = 200_000

/** Measurements past what a call takes as arguments (Math.min(...values)). */
export const MANY = 450_000

/** Object.prototype's names, as a record's keys. */
export const PROTOTYPE_NAMES = Object.freeze(['toString', 'constructor', '__proto__'])

/** `{"a":{"a":...1...}}`, `depth` objects deep, written by concatenation. */
export function nestedText (depth) {
  let text = '1'
  for (let k = 0; k < depth; k++) text = `{"a":${text}}`
  return text
}

/** A good record's text with `"params":{` given members of its own first. */
function withParams (text, members) {
  const at = text.indexOf('"params":{') + '"params":{'.length
  return `${text.slice(0, at)}${members},${text.slice(at)}`
}

/**
 * The hostile records, by name, each `{ id, text, field }`: `field` is what the check names.
 * @returns {Record<string, { id: string, text: string, field: string|null }>}
 */
export function hostileRecords () {
  const far = makeTestRecord({ id: 'far-future' })
  far.record.run.startedAt = 1e300
  const deep = makeTestRecord({ id: 'deep-params' })
  const many = makeTestRecord({
    id: 'many-measurements',
    source: 'bench',
    samples: [],
    marks: [],
    results: { cells: [{ route: 'good', a: 1, measurements: [{ a: 1 }] }] }
  })
  // the shortest measurement there is, so that MANY of them fit in a record's 4 MiB
  const measurements = `"measurements":[${new Array(MANY).fill('{"a":1}').join(',')}]`
  const renamed = makeTestRecord({ id: 'claimed-id' })
  return {
    'far-future': { id: 'far-future', text: JSON.stringify(far.record), field: 'run.startedAt' },
    'deep-params': { id: 'deep-params', text: withParams(deep.text, `"deep":${nestedText(DEEP)}`), field: 'run.params.deep.a.a.a…' },
    'many-measurements': { id: 'many-measurements', text: many.text.replace('"measurements":[{"a":1}]', measurements), field: 'results.cells[0].measurements' },
    // the file is renamed-run.json: a file's name is its id
    'renamed-run': { id: 'renamed-run', text: renamed.text, field: 'id' }
  }
}

/**
 * Two good records whose params differ by the names Object.prototype has: the first has none of
 * them, the second all three (`__proto__` as JSON.parse keeps it, an own member).
 */
export function prototypeKeyRecords () {
  const a = makeBusyRecord({ id: 'plain-params' })
  const b = makeBusyRecord({ id: 'prototype-params' })
  const members = PROTOTYPE_NAMES.map(function member (name, k) { return `${JSON.stringify(name)}:${k + 1}` }).join(',')
  return { a: { id: a.record.id, text: a.text }, b: { id: b.record.id, text: withParams(b.text, members) } }
}
