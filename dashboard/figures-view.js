/** The big numbers beside the charts, from the latest sample, the stores' window and the mark log. */
import { formatMiB, formatMs } from './format.js'
import { MiB } from '../lib/util/units.js'

/** Returns a function that draws the figures of a sample. */
export function createFigures ({ store, marks }) {
  /** The window's largest value of a MiB series, in bytes (null when empty). */
  function windowMax (key) {
    const max = store.maxOf(key)
    return max === null ? null : max * MiB
  }

  return function renderFigures (s) {
    if (s === null) return
    setFigure('rss', formatMiB(s.rss), `max in window ${formatMiB(windowMax('rss'))}`)
    setFigure('peakRss', formatMiB(s.peakRss), s.peakSource === 'VmHWM'
      ? 'kernel peak, since the last reset'
      : 'sampled peak (every 5 ms while a request or run is measured), since the last reset')
    setFigure('heapUsed', formatMiB(s.heapUsed), `of ${formatMiB(s.heapTotal)} heap`)
    setFigure('arrayBuffers', formatMiB(s.arrayBuffers), `external ${formatMiB(s.external)}`)
    setFigure('loop', formatMs(s.eventLoop?.p99), `max ${formatMs(s.eventLoop?.max)} · in window ${formatMs(store.maxOf('loopMax'))}`)
    // the uploads drawn on the chart, route by route (an experiment's warm-up is neither: warm-ups.js)
    const seen = Object.entries(marks.seen).filter(function any ([, n]) { return n > 0 })
      .map(function routeCount ([route, n]) { return `${n} to /${route}` })
    const since = seen.length === 0 ? 'none since this page opened' : `since this page opened: ${seen.join(', ')}`
    setFigure('requests', String(marks.open.size), since)
  }
}

function setFigure (key, main, sub) {
  document.getElementById(`figure-${key}`).textContent = main
  document.getElementById(`figure-${key}-sub`).textContent = sub
}
