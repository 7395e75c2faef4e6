/**
 * Downloads made in the page, from what it already holds: the samples as
 * CSV or JSON, the chart as PNG. Nothing goes back to the server, so an
 * export works while the lab is down, too.
 */
import { MiB, fileStamp } from './format.js'

/** The CSV columns, in bytes (what the server sent) and ms. */
const MEMORY_KEYS = Object.freeze(['rss', 'heapTotal', 'heapUsed', 'external', 'arrayBuffers', 'peakRss'])
const LOOP_KEYS = Object.freeze(['loopP99', 'loopMax'])

/**
 * The kept samples as CSV: one row per sample, memory in bytes.
 * @param {import('./series-store.js').SeriesStore} store
 */
export function samplesToCsv (store) {
  const lines = [['time', 'isoTime', ...MEMORY_KEYS, 'eventLoopP99Ms', 'eventLoopMaxMs'].join(',')]
  for (const row of store.rows()) {
    const cells = [row.time, new Date(row.time).toISOString()]
    // the store holds MiB; MiB is a power of two, so this gives back the exact bytes
    for (const key of MEMORY_KEYS) cells.push(row[key] === null ? '' : Math.round(row[key] * MiB))
    for (const key of LOOP_KEYS) cells.push(row[key] === null ? '' : row[key])
    lines.push(cells.join(','))
  }
  return lines.join('\n') + '\n'
}

/**
 * The kept samples and marks as JSON.
 * @param {import('./series-store.js').SeriesStore} store
 * @param {import('./mark-log.js').MarkLog} marks
 * @param {object} meta what the page knows about the session (interval, window)
 */
export function samplesToJson (store, marks, meta) {
  const samples = []
  for (const row of store.rows()) {
    const sample = { time: row.time }
    for (const key of MEMORY_KEYS) sample[key] = row[key] === null ? null : Math.round(row[key] * MiB)
    sample.eventLoop = { p99: row.loopP99, max: row.loopMax }
    samples.push(sample)
  }
  return JSON.stringify({
    exportedAt: new Date().toISOString(),
    ...meta,
    units: { memory: 'bytes', eventLoop: 'ms' },
    samples,
    requests: marks.requests,
    peakResets: marks.peakResets,
    crashes: marks.crashes
  }, null, 1)
}

/**
 * Save text as a file, through a Blob URL that is revoked afterwards.
 * @param {string} name file name
 * @param {string} type media type
 * @param {string} text
 */
export function downloadText (name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }))
  clickDownload(name, url)
  // the download has taken the bytes by then; the URL would otherwise pin them for the page's life
  setTimeout(function revokeDownloadUrl () { URL.revokeObjectURL(url) }, 10_000)
}

/**
 * Save a chart as PNG.
 * @param {object} chart a Chart.js chart
 * @param {string} name file name
 */
export function downloadChartPng (chart, name) {
  clickDownload(name, chart.toBase64Image('image/png'))
}

/** A file name: streamlab-samples-2026-11-22T10-15-00.csv */
export function exportName (what, extension) {
  return `streamlab-${what}-${fileStamp()}.${extension}`
}

function clickDownload (name, href) {
  const link = document.createElement('a')
  link.href = href
  link.download = name
  link.hidden = true
  document.body.append(link)
  link.click()
  link.remove()
}
