/**
 * The three body formats the ingest routes read (an object with an `items` array, a top-level array,
 * NDJSON) and how a body's first bytes decide which. Import from records.js.
 */
import { QUOTE, BACKSLASH, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET, NEWLINE, isWhitespace } from './bytes.js'

export const FORMATS = Object.freeze(['json', 'array', 'ndjson'])

/** How much of the inflated body format detection may look at. */
export const DETECT_BYTES = 64 * 1024

/** The index of the unescaped quote that ends a string going on at `from`, before `end`, or -1. */
function closingQuoteBefore (bytes, from, end) {
  let i = from
  for (;;) {
    const q = bytes.indexOf(QUOTE, i)
    if (q === -1 || q >= end) return -1
    let k = q - 1
    while (k >= from && bytes[k] === BACKSLASH) k--
    if ((q - 1 - k) % 2 === 0) return q
    i = q + 1
  }
}

/**
 * The format of a body from its first bytes (up to DETECT_BYTES), the same for every route: NDJSON when
 * the first value ends on its own line and another follows; else `array` for a leading `[`, else `json`.
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
        // from quote to quote (a JSON document is mostly strings): a quote after an odd
        // run of backslashes is escaped, as reading them a pair at a time would find
        const q = closingQuoteBefore(prefix, i, n)
        if (q === -1) { i = n; break }
        inString = false
        i = q
        if (depth === 0) { i++; break }
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
