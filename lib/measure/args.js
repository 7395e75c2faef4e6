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
