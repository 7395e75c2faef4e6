/** Small parsers shared by the benches' flags. */

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
 * @param {string[]} argv
 * @param {{ usage: string, readOptions: (argv: string[]) => object|null, run: (options: object) => Promise<number> }} command
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
