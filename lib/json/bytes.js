/**
 * The bytes of JSON's structure, and the one way the lab finds where a string ends in a chunk: the
 * record scanner and the parse-cost projection read JSON a chunk at a time and must agree on what is
 * inside a string, escapes split across chunks included.
 */

export const QUOTE = 0x22
export const BACKSLASH = 0x5c
export const OPEN_BRACE = 0x7b
export const CLOSE_BRACE = 0x7d
export const OPEN_BRACKET = 0x5b
export const CLOSE_BRACKET = 0x5d
export const COMMA = 0x2c
export const COLON = 0x3a
export const NEWLINE = 0x0a

/** Whether byte `c` ends a scalar (number or literal) inside a structure. */
export function endsScalar (c) {
  return isWhitespace(c) || c === COMMA || c === CLOSE_BRACKET || c === CLOSE_BRACE
}

/** Whitespace between JSON tokens: space, line feed, carriage return, tab. */
export function isWhitespace (c) {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}

/**
 * The index of the quote that closes the string going on at `from`, or -1 when the chunk ends first.
 * Jumps from quote to quote with `indexOf`, counting the backslashes before each; `state.escapeCarry`
 * says the previous chunk ended on an odd run of them, and is left saying so of this one on -1.
 */
export function closingQuote (chunk, from, state) {
  let i = from
  for (;;) {
    const q = chunk.indexOf(QUOTE, i)
    let run = 0
    let k = (q === -1 ? chunk.length : q) - 1
    while (k >= i && chunk[k] === BACKSLASH) { run++; k-- }
    let escaped = run % 2 === 1
    // the run reached back to where this look began: the carried backslash joins it
    if (k < i && state.escapeCarry) escaped = !escaped
    if (q === -1) {
      state.escapeCarry = escaped
      return -1
    }
    state.escapeCarry = false
    if (!escaped) return q
    i = q + 1
  }
}

/**
 * The last of `pieces`, if a view of `buffer`, replaced by a copy of its own (the buffer is about to be
 * reused): a scanner keeps one piece a chunk, and each earlier one was detached as its chunk ended.
 */
export function detachPieces (pieces, buffer) {
  const last = pieces.length - 1
  if (last >= 0 && pieces[last].buffer === buffer) pieces[last] = Uint8Array.prototype.slice.call(pieces[last])
}
