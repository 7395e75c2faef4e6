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

/** Exit code of a command given a flag it does not take, or a value it cannot read. */
const EXIT_USAGE = 2

/**
 * A measuring script's command line, read one way: a flag it cannot read
 * prints the message and the usage (exit 2); `readOptions` returning null
 * (--help) prints the usage alone (exit 0); otherwise `run(options)` says the
 * exit code.
 * @returns {Promise<number>} the exit code
 */
export async function runCommand (argv, { usage, readOptions, run }) {
  let options
  try {
    options = readOptions(argv)
  } catch (err) {
    process.stderr.write(`${err.message}\n${usage}\n`)
    return EXIT_USAGE
  }
  if (options === null) {
    process.stdout.write(`${usage}\n`)
    return 0
  }
  return run(options)
}

/**
 * A measuring script's flags: `options` as parseArgs takes them, and the --figures NAME (its name
 * checked) and -h/--help every such script takes.
 * @param {object} options parseArgs options of the script's own flags
 * @returns {null|{ values: object, integer: (name: string, min: number, max: number) => number }} null
 *   for --help; `integer` reads flag `name` as an integer within [min, max]
 * @throws {TypeError} naming the flag it cannot read
 */
export function readScriptFlags (argv, options) {
  const { values } = parseArgs({ args: argv, options: { ...options, figures: { type: 'string' }, help: { type: 'boolean', short: 'h' } } })
  if (values.help) return null
  checkFiguresName(values.figures)
  return {
    values,
    integer: function integer (name, min, max) {
      const n = Number(values[name])
      if (!Number.isInteger(n) || n < min || n > max) throw new TypeError(`--${name} takes an integer from ${min} to ${max}, got "${values[name]}"`)
      return n
    }
  }
}
