/** Small parsers shared by the benches' and measuring scripts' flags. */
import { parseArgs } from 'node:util'
import { checkFiguresName } from './figures.js'

/** A comma-separated list, each item parsed. */
export function list (text, parse) {
  return text.split(',').map(function item (s) { return s.trim() }).filter(Boolean).map(parse)
}

/** A parser of positive integers for flag `name`. */
export function positiveInteger (name) {
  return function parse (text) {
    const n = Number(text)
    if (!Number.isInteger(n) || n < 1) throw new TypeError(`--${name} takes positive integers, got "${text}"`)
    return n
  }
}

/**
 * A measuring script's flags with the --figures NAME and -h/--help every one takes: null for --help, else
 * `values` and `integer(name, min, max)`. A TypeError names a flag it cannot read.
 */
export function readScriptFlags (argv, options) {
  const { values } = parseArgs({ args: argv, options: { ...options, figures: { type: 'string' }, help: { type: 'boolean', short: 'h' } } })
  if (values.help) return null
  checkFiguresName(values.figures)
  return {
    values,
    integer: function integer (name, min, max) {
      const n = Number(values[name])
      if (Number.isInteger(n) && n >= min && n <= max) return n
      throw new TypeError(`--${name} takes an integer from ${min} to ${max}, got "${values[name]}"`)
    }
  }
}
