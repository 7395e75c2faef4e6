// Parameter checking shared by experiment modules: a module declares its schema once (what GET /experiments
// shows a dashboard) and normalizeBySchema reads a client's params against it. Schema entries: README.md.
import { badParameter } from '../errors/index.js'
import { integerParam as checkedInteger } from '../config/integers.js'
import { parseByteSize } from '../util/units.js'

/**
 * Check raw params (an object, or nothing for all defaults; numbers may come as strings) against a schema, with
 * `max` tighter than the schema's; a new object with every schema name. 400 parameter.invalid names the field.
 */
export function normalizeBySchema (schema, raw, { max = {} } = {}) {
  const given = givenParams(schema, raw)
  const out = {}
  for (const spec of schema) {
    const value = given[spec.name]
    if (!isPresent(value)) {
      out[spec.name] = spec.type === 'size' && typeof spec.default === 'string' ? parseByteSize(spec.default) : spec.default ?? null
      continue
    }
    const upper = Math.min(spec.max ?? Number.MAX_SAFE_INTEGER, max[spec.name] ?? Number.MAX_SAFE_INTEGER)
    // a list's items are bounded by other params (a batch size by the rows, say): its module reads it
    if (spec.type === 'list') out[spec.name] = value
    else if (spec.type === 'enum') out[spec.name] = enumParam(spec.name, value, spec.values)
    else if (spec.type === 'integer') out[spec.name] = integerParam(spec.name, value, spec.min ?? 0, upper)
    else if (spec.type === 'size') out[spec.name] = sizeParam(spec.name, value, spec.min ?? 1, upper)
    else throw new TypeError(`schema entry ${spec.name} has an unknown type ${spec.type}`)
  }
  return out
}

/** The params a client sent (`raw`, or {} for nothing), checked only for being an object of the schema's names. */
export function givenParams (schema, raw) {
  const given = raw ?? {}
  if (typeof given !== 'object' || Array.isArray(given)) throw badParameter('params', JSON.stringify(raw), 'an object of parameters')
  const names = schema.map(function paramName (p) { return p.name })
  for (const key of Object.keys(given)) {
    if (!names.includes(key)) throw badParameter(`params.${key}`, key, `one of the parameters ${names.join(', ')}`)
  }
  return given
}

/** Whether a param was given at all: the dashboard sends empty fields as "". */
export function isPresent (value) {
  return value !== undefined && value !== null && value !== ''
}

/** An integer from `min` to `max`, given as a number or a string of digits. */
function integerParam (key, value, min, max) {
  return checkedInteger(`params.${key}`, value, min, max)
}

/** A byte size ("15MB", "1.5GiB", 1048576) from `min` to `max` bytes. */
export function sizeParam (key, value, min, max) {
  const allowed = `a byte size from ${min} to ${max} bytes, e.g. 15MB or 1.5GiB`
  let bytes
  try {
    bytes = parseByteSize(typeof value === 'number' ? String(value) : value)
  } catch {
    throw badParameter(`params.${key}`, value, allowed)
  }
  if (bytes < min || bytes > max) throw badParameter(`params.${key}`, value, allowed)
  return bytes
}

/** One of `values` (compared as strings, so 65536 matches "65536"). */
function enumParam (key, value, values) {
  const text = typeof value === 'number' ? String(value) : value
  if (!values.includes(text)) throw badParameter(`params.${key}`, value, `one of ${values.join(', ')}`)
  return text
}

/** A schema entry for one of `values`; the first is the default unless another is named. */
export function choiceEntry (name, { values, valueLabels, default: fallback = values[0], label, help }) {
  return { name, type: 'enum', values: [...values], valueLabels, default: fallback, label, help }
}

/** A schema entry for an integer from `min` (1 unless given: most are counts) to `max`. */
export function integerEntry (name, { default: fallback, min = 1, max, label, help }) {
  return { name, type: 'integer', default: fallback, min, max, label, help }
}

/** A schema entry for a byte size ("15MB", 1048576) from `min` (1 unless given) to `max` bytes. */
export function sizeEntry (name, { default: fallback, min = 1, max, label, help }) {
  return { name, type: 'size', default: fallback, min, max, label, help }
}

/** A schema entry for a comma-separated list, passed through by `normalizeBySchema` for its module to read. */
export function listEntry (name, { default: fallback, label, help }) {
  return { name, type: 'list', default: fallback, label, help }
}

/** The `sweep` entry: "steps" runs the steps below a highest value and then it (`sweepLevels`), "single" only it. */
export function sweepEntry ({ steps, single, label, help }) {
  return choiceEntry('sweep', { values: ['steps', 'single'], valueLabels: { steps, single }, label, help })
}

/** Mark an entry as changeable while a run runs: the run is told (`ctx.onParams`) and applies it. */
export function liveEntry (entry) {
  return { ...entry, live: true }
}

/**
 * A running run's params with the `live` ones a client changed, each checked by the module's own
 * `normalizeParams` (with the app `options`) as at the start; 400 for a name that is not live.
 */
export function changeLiveParams (mod, current, raw, options) {
  const live = mod.params.filter(function isLive (p) { return p.live === true }).map(function paramName (p) { return p.name })
  const given = givenParams(mod.params, raw)
  const names = Object.keys(given)
  const which = live.length > 0 ? `only ${live.join(', ')}` : `no parameter of ${mod.name}`
  const changeable = `${which} can change while a run runs`
  if (names.length === 0) throw badParameter('params', JSON.stringify(raw ?? null), `an object of the parameters to change: ${changeable}`)
  for (const key of names) {
    if (!live.includes(key)) throw badParameter(`params.${key}`, given[key], `a parameter set when the run starts: ${changeable}`)
  }
  return mod.normalizeParams({ ...current, ...given }, options)
}

/** The levels a `sweep` param runs, ending on `top`. */
export function sweepLevels (sweep, steps, top) {
  return sweep === 'steps' ? stepsUpTo(steps, top) : [top]
}

/** The steps up to `top` (e.g. the article's concurrencies 1, 10, 50, 100, 200), and `top`, ascending. */
export function stepsUpTo (steps, top) {
  const levels = steps.filter(function atMostTop (s) { return s < top })
  levels.push(top)
  return levels
}

/** Freeze an object and everything in it (schemas are shared with every client). */
export function deepFreeze (value) {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}
