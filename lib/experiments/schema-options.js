// A bench's command-line options from its experiment's parameter schema, checked by the experiment's own
// normalizeParams: the schema says each name, default and range once. Usage: README.md.

/** `abortAt` -> `abort-at`. */
function flagName (param) {
  return param.name.replace(/[A-Z]/g, function kebab (c) { return `-${c.toLowerCase()}` })
}

/** node:util parseArgs option specs, one per schema entry, with no default of their own. */
export function optionsFromSchema (schema) {
  const options = {}
  for (const param of schema) options[flagName(param)] = Object.freeze({ type: 'string' })
  return Object.freeze(options)
}

/** The usage lines under the bench's `name`: each flag, what it takes, its label, default and range. */
export function usageFromSchema (name, schema) {
  const lines = schema.map(function usageLine (param) {
    const flag = `  --${flagName(param)} ${placeholder(param)}`
    const bounded = Number.isFinite(param.min) && Number.isFinite(param.max)
    const range = bounded ? `, ${param.min} to ${param.max}${param.type === 'size' ? ' bytes' : ''}` : ''
    const fallback = param.default === null || param.default === undefined ? 'set by the experiment' : String(param.default)
    return { flag, text: `${param.label ?? param.name} (default ${fallback}${range})` }
  })
  const width = Math.max(...lines.map(function flagWidth (l) { return l.flag.length })) + 2
  return `Options (${name}, from the experiment's parameters):\n` +
    lines.map(function padded (l) { return `${l.flag.padEnd(width)}${l.text}` }).join('\n')
}

/** The params from parsed flags, as POST /experiments would have them; a TypeError names the flag. */
export function paramsFromFlags (experiment, values, appOptions) {
  const raw = {}
  for (const param of experiment.params) {
    const value = values[flagName(param)]
    if (value !== undefined) raw[param.name] = value
  }
  try {
    return experiment.normalizeParams(raw, appOptions)
  } catch (err) {
    const parameter = err?.details?.parameter
    if (err?.type !== 'parameter.invalid' || typeof parameter !== 'string') throw err
    const param = experiment.params.find(function named (p) { return `params.${p.name}` === parameter })
    throw new TypeError(`--${param ? flagName(param) : parameter} ${err.details.value}: expected ${err.details.allowed}`, { cause: err })
  }
}

function placeholder (param) {
  if (param.type === 'enum') return param.values.join('|')
  if (param.type === 'size') return 'SIZE'
  return 'N'
}

function paramNamed (schema, name) {
  const param = schema.find(function named (p) { return p.name === name })
  if (!param) throw new TypeError(`the schema has no parameter "${name}"`)
  return param
}

/**
 * A parameter's default, for a bench whose flag means the same thing with a list of its own
 * (`--bytes` of the upload bench is the experiment's `bytes`): the schema says it once.
 */
export function schemaDefault (schema, name) {
  return paramNamed(schema, name).default
}

/** An enum parameter's values less the ones that stand for several (`both`, `all`): a bench's list flag. */
export function schemaChoices (schema, name, { without = ['both', 'all'] } = {}) {
  const param = paramNamed(schema, name)
  if (param.type !== 'enum') throw new TypeError(`"${name}" is not an enum parameter`)
  return param.values.filter(function single (v) { return !without.includes(v) })
}
