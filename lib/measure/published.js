/** The published figures beside the measured ones, as a Markdown table for the bench reports. */
import { markdownTable } from './table.js'

export function publishedTable (published) {
  const rows = published.map(function row (p) {
    return [p.label, `${p.value} ${p.unit}`, p.measured === null ? 'not run' : `${p.measured} ${p.unit}`]
  })
  const sources = [...new Set(published.map(function source (p) { return p.source }))]
  const notes = sources.map(function note (s) { return `Published: ${s}.` }).join('\n')
  return `${markdownTable(['figure', 'published', 'measured here'], rows)}\n\n${notes}\n`
}
