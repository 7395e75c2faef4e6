/**
 * The three body formats both ingest routes read (a JSON object with an
 * `items` array, a top-level array, NDJSON) and how a body's first bytes
 * decide which it is. Import from lib/json-records.js.
 */
import { QUOTE, BACKSLASH, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET, NEWLINE, isWhitespace } from './json-bytes.js'

export const FORMATS = Object.freeze(['json', 'array', 'ndjson'])

/** How much of the inflated body format detection may look at. */
export const DETECT_BYTES = 64 * 1024

/**
 * Decide the format from the first bytes of the inflated body, the same way
 * for both routes: NDJSON when the first value ends on its own line and
 * another value follows; otherwise `array` for a leading `[`, else `json`.
 * @param {Uint8Array} prefix up to DETECT_BYTES of the body
 * @returns {'json'|'array'|'ndjson'}
 */
export function detectFormat (prefix) {
  const n = Math.min(prefix.length, DETECT_BYTES)
  let i = 0
  while (i < n && isWhitespace(prefix[i])) i++
  if (i >= n) return 'json'
  const first = prefix[i]
  const fallback = first === OPEN_BRACKET ? 'array' : 'json'
  // find the end of the first value
  if (first === OPEN_BRACE || first === OPEN_BRACKET || first === QUOTE) {
    let depth = 0
    let inString = false
    for (; i < n; i++) {
      const c = prefix[i]
      if (inString) {
        if (c === BACKSLASH) i++
        else if (c === QUOTE) {
          inString = false
          if (depth === 0) { i++; break }
        }
      } else if (c === QUOTE) inString = true
      else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        depth--
        if (depth === 0) { i++; break }
      }
    }
    if (depth !== 0 || inString) return fallback
  } else {
    while (i < n && !isWhitespace(prefix[i])) i++
  }
  // after the first value: a newline, then more content?
  let sawNewline = false
  for (; i < n; i++) {
    const c = prefix[i]
    if (c === NEWLINE) sawNewline = true
    else if (!isWhitespace(c)) return sawNewline ? 'ndjson' : fallback
  }
  return fallback
}
