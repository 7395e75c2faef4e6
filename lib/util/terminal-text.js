/**
 * Text someone else controls (a submission's name, what it printed, its error
 * text, a crash line; a run record's strings) made safe for a terminal: every
 * control character shown escaped, so that a name cannot start a new line (a fake `bob: PASS 18/18`),
 * an escape sequence cannot erase a line, recolour it or set the window's
 * title, and a bidi control cannot show the text in another order. The CSV
 * and the HTML table have their own escaping (grader/card/class-table.js).
 */

/**
 * The characters escaped: C0 (U+0000-001F), DEL and C1 (U+007F-009F), the
 * bidi marks and embeddings (U+061C, U+200E, U+200F, U+202A-202E,
 * U+2066-2069), and the line and paragraph separators (U+2028, U+2029).
 */
const CONTROL = /[\p{Cc}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu
const NAMED = Object.freeze({ '\n': '\\n', '\r': '\\r', '\t': '\\t' })

/**
 * `value` as text with every control character escaped: `\n`, `\r`, `\t`
 * by name, another below U+0100 as `\xHH` (ESC is `\x1b`), one above as
 * `\uHHHH`. A backslash stays as it is (a Windows path reads as typed), so
 * the escapes show what was there rather than encode it exactly.
 * @param {unknown} value
 * @returns {string}
 */
export function terminalText (value) {
  return String(value ?? '').replace(CONTROL, function escaped (c) {
    if (Object.hasOwn(NAMED, c)) return NAMED[c]
    const code = c.charCodeAt(0)
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
}
