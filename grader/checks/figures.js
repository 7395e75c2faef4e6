/** The least-squares slope the memory verdicts stand on (the checks round with lib/util/units.js `round`). */

/** The least-squares slope of y against x; 0 when every x is the same. */
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

/** The steepest slope (either way) of points at `xs` (two or more distinct) with y in 0..`maxY`, per `per` units. */
export function steepestSlope (xs, per, maxY) {
  const x = xs.map(function scaled (v) { return v / per })
  const mean = x.reduce(function sum (s, v) { return s + v }, 0) / x.length
  const spread = x.reduce(function sum (s, v) { return s + Math.abs(v - mean) }, 0)
  const variance = x.reduce(function sum (s, v) { return s + (v - mean) ** 2 }, 0)
  return maxY * spread / 2 / variance
}
