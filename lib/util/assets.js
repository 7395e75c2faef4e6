/**
 * Where the browser-side files come from. Chart.js is served and copied from node_modules: the lab works with no internet (a
 * classroom projector often has none), so never from a CDN.
 */
import path from 'node:path'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

function chartJsDir () {
  // chart.js's "exports" hides dist/chart.umd.js; its main entry lives in dist/
  return path.dirname(require.resolve('chart.js'))
}

/** Chart.js's UMD build, which a plain <script> tag can load. */
export function chartJsFile () {
  return path.join(chartJsDir(), 'chart.umd.js')
}
