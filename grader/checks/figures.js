/**
 * The arithmetic the checks' figures share: a tenth as the card rounds to,
 * and the least-squares slope the memory verdicts stand on.
 */

/**
 * @param {number} value
 * @returns {number} rounded to a tenth
 */
export function round (value) {
  return Math.round(value * 10) / 10
}

/**
 * The least-squares slope of y against x; 0 when every x is the same.
 * @param {Array<[number, number]>} xy
 * @returns {number}
 */
export function leastSquaresSlope (xy) {
  const n = xy.length
  const mx = xy.reduce(function sum (s, [x]) { return s + x }, 0) / n
  const my = xy.reduce(function sum (s, [, y]) { return s + y }, 0) / n
  let num = 0
  let den = 0
  for (const [x, y] of xy) {
    num += (x - mx) * (y - my)
    den += (x - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}
