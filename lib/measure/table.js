/** Plain-text and Markdown tables for the bench CLI and its reports. */
import { formatMiB } from '../util/units.js'

/**
 * @returns {string} a Markdown table, aligned so it reads in a terminal too
 */
export function markdownTable (header, rows) {
  const cells = [header, ...rows].map(function asText (row) { return row.map(String) })
  // a loop, not Math.max(...): a table of a record's figures may have more rows than a call takes arguments
  const widths = header.map(function width (_, k) {
    let widest = 0
    for (const row of cells) widest = Math.max(widest, row[k].length)
    return widest
  })
  function line (row) {
    return '| ' + row.map(function pad (cell, k) { return cell.padEnd(widths[k]) }).join(' | ') + ' |'
  }
  const rule = '| ' + widths.map(function dashes (w) { return '-'.repeat(w) }).join(' | ') + ' |'
  return [line(cells[0]), rule, ...cells.slice(1).map(line)].join('\n')
}

/** Bytes as MiB, one decimal, no unit (the column's heading says it); "n/a" for none. */
export function mib (bytes) {
  return formatMiB(bytes, { unit: false })
}

export function fixed (value, digits = 1) {
  return value === null || value === undefined ? 'n/a' : value.toFixed(digits)
}
