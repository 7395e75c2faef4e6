/**
 * Two run records side by side: each route's figures in both, their ratio and difference, and whether the difference is inside
 * the spread of the repeats; and the `--fail-if` rules that turn a difference into an exit code (`good.peak>+10%`), so one
 * command guards memory in CI.
 */
import { parseByteSize } from '../util/units.js'
import { MEASURES, coordinatesOf, figureFor, figuresOf, keysOf } from './figures.js'

/**
 * Whether b's figure differs from a's by more than the repeats spread: the ranges of both (or the range of one and the other's
 * value) overlap, or not. Null when neither has repeats.
 */
export function spreadVerdict (a, b) {
  const rangeA = a.n > 1 ? [a.min, a.max] : null
  const rangeB = b.n > 1 ? [b.min, b.max] : null
  if (rangeA === null && rangeB === null) return null
  const [lowA, highA] = rangeA ?? [a.value, a.value]
  const [lowB, highB] = rangeB ?? [b.value, b.value]
  return lowA <= highB && lowB <= highA ? 'inside' : 'outside'
}

/** b against a: ratio (null when a is 0) and difference. */
function delta (a, b) {
  return { ratio: a.value === 0 ? null : b.value / a.value, difference: b.value - a.value }
}

/**
 * The rows of a comparison: for every key (route or cell) both records have, the measures (or, with `all`, every figure) either
 * has: `{ rows: [{ key, name, label, unit, a, b, ratio, difference, spread }], onlyA, onlyB, params, where }`.
 */
export function compareRecords (a, b, { all = false } = {}) {
  const coordinates = coordinatesOf([a, b])
  const figuresA = figuresOf(a, coordinates)
  const figuresB = figuresOf(b, coordinates)
  const keysA = keysOf(figuresA)
  const keysB = keysOf(figuresB)
  const inA = new Set(keysA)
  const inB = new Set(keysB)
  const namesByKey = all ? figureNames([figuresA, figuresB]) : null
  const rows = []
  for (const key of keysA.filter(function inBoth (k) { return inB.has(k) })) {
    const names = all ? namesByKey.get(key) : MEASURES.map(function name (m) { return m.name })
    for (const name of names) {
      const fa = figureFor(figuresA, key, name)
      const fb = figureFor(figuresB, key, name)
      if (fa === null && fb === null) continue
      const measure = MEASURES.find(function named (m) { return m.name === name })
      const both = fa !== null && fb !== null && fa.name === fb.name
      rows.push({
        key,
        name,
        label: measure?.label ?? name,
        unit: (fa ?? fb).unit,
        a: fa,
        b: fb,
        ...(both ? delta(fa, fb) : { ratio: null, difference: null }),
        spread: both ? spreadVerdict(fa, fb) : null
      })
    }
  }
  return {
    rows,
    onlyA: keysA.filter(function notInB (k) { return !inB.has(k) }),
    onlyB: keysB.filter(function notInA (k) { return !inA.has(k) }),
    params: differences(a.run.params ?? {}, b.run.params ?? {}),
    where: differences(
      { node: a.where.node, platform: `${a.where.platform}-${a.where.arch}`, cores: a.where.cores, memoryBytes: a.where.memoryBytes,
        portable: a.where.portable, lab: a.where.lab.version },
      { node: b.where.node, platform: `${b.where.platform}-${b.where.arch}`, cores: b.where.cores, memoryBytes: b.where.memoryBytes,
        portable: b.where.portable, lab: b.where.lab.version })
  }
}

/** Each key's figure names in some records' figures, in the order met. */
function figureNames (all) {
  const names = new Map()
  for (const figures of all) {
    for (const f of figures.values()) {
      if (!names.has(f.key)) names.set(f.key, new Set())
      names.get(f.key).add(f.name)
    }
  }
  return names
}

/** The members that differ; a name one side lacks is `undefined` there, whatever Object.prototype has of that name (`toString`). */
function differences (a, b) {
  const out = []
  for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const inA = Object.hasOwn(a, name) ? a[name] : undefined
    const inB = Object.hasOwn(b, name) ? b[name] : undefined
    if (JSON.stringify(inA) !== JSON.stringify(inB)) out.push({ name, a: inA, b: inB })
  }
  return out
}

const RULE = /^(.+?)\.([A-Za-z][\w.]*?)\s*(<=|>=|<|>)\s*(\S.*)$/
const OPERATORS = Object.freeze({
  '>': function greater (x, y) { return x > y },
  '>=': function atLeast (x, y) { return x >= y },
  '<': function less (x, y) { return x < y },
  '<=': function atMost (x, y) { return x <= y }
})

/**
 * Read a `--fail-if` rule: `<route or cell>.<figure><op><threshold>`, `*` for every route. The figure is a measure (`peak`,
 * `throughput`, `latency`) or any figure's name; the threshold a change in percent (`+10%`), a ratio (`1.2x`), or a difference in
 * the figure's own unit: a byte size (`+5MiB`), ms (`+20ms`) or a plain number. A TypeError says what a rule looks like.
 */
export function parseFailIf (text) {
  const match = RULE.exec(String(text).trim())
  const usage = `--fail-if takes ROUTE.FIGURE then > >= < <= and a threshold, e.g. "good.peak>+10%", "*.latency>1.5x", ` +
    `"bad.peak>+20MiB"; got "${text}"`
  if (match === null) throw new TypeError(usage)
  const [, who, name, op, raw] = match
  const threshold = raw.trim()
  let kind
  let value
  if (/^[+-]?\d+(\.\d+)?%$/.test(threshold)) {
    kind = 'percent'
    value = Number(threshold.slice(0, -1))
  } else if (/^\d+(\.\d+)?x$/.test(threshold)) {
    kind = 'ratio'
    value = Number(threshold.slice(0, -1))
  } else if (/^[+-]?\d+(\.\d+)?(ms)?$/.test(threshold)) {
    kind = 'difference'
    value = Number(threshold.replace(/ms$/, ''))
  } else {
    kind = 'difference'
    const sign = threshold.startsWith('-') ? -1 : 1
    try {
      value = sign * parseByteSize(threshold.replace(/^[+-]/, ''))
    } catch {
      throw new TypeError(usage)
    }
  }
  return { text: String(text).trim(), who: who.trim(), name, op, kind, threshold: value }
}

/** b against a in a rule's kind: percent (from 0, ±Infinity unless both are 0), ratio (null from 0), difference. */
function change (kind, a, b) {
  if (kind === 'percent') {
    if (a === 0) return b === 0 ? 0 : Math.sign(b) * Infinity
    return (b - a) / Math.abs(a) * 100
  }
  if (kind === 'ratio') return a === 0 ? null : b / a
  return b - a
}

/**
 * Judge a rule on two records: every key it names (each route's, for `*`) whose figure both have, `{ key, a, b, value, failed }`
 * with `value` the change in the rule's kind (null for a ratio over 0). A TypeError when no key has the figure in both.
 */
export function judgeFailIf (rule, a, b) {
  const coordinates = coordinatesOf([a, b])
  const figuresA = figuresOf(a, coordinates)
  const figuresB = figuresOf(b, coordinates)
  const keysB = new Set(keysOf(figuresB))
  const routes = new Map([...figuresA.values()].map(function routeOf (f) { return [f.key, f.route] }))
  const keys = keysOf(figuresA).filter(function named (key) {
    return keysB.has(key) && (rule.who === '*' || key === rule.who || routes.get(key) === rule.who)
  })
  const verdicts = []
  for (const key of keys) {
    const fa = figureFor(figuresA, key, rule.name)
    const fb = figureFor(figuresB, key, rule.name)
    if (fa === null || fb === null || fa.name !== fb.name) continue
    const value = change(rule.kind, fa.value, fb.value)
    verdicts.push({ key, a: fa, b: fb, value, failed: value !== null && OPERATORS[rule.op](value, rule.threshold) })
  }
  const who = rule.who === '*' ? 'route' : `"${rule.who}"`
  if (verdicts.length === 0) throw new TypeError(`--fail-if "${rule.text}": no ${who} has a figure "${rule.name}" in both runs`)
  return verdicts
}
