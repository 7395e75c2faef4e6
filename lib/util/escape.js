/**
 * Text someone else controls (a submission's name, its sites' files and functions, what it printed, a record's strings), one
 * escaping function per format, so that every format shows the same thing: every control character and every mark that reorders
 * or hides text as a visible escape (`\n`, `\x1b`, `\u202e`). A name cannot start a line of its own (a fake `PASS memory`), an
 * escape sequence cannot rewrite a terminal, a bidi mark cannot show `f\u202egnp.exe` as "fexe.png". The grader, lib/ and the
 * dashboard (by `/lib/util/escape.js`) all import it; it uses nothing of Node's.
 */

/**
 * The characters shown escaped: C0 (U+0000-001F), DEL and C1 (U+007F-009F), the bidi marks, embeddings and isolates (U+061C,
 * U+200E, U+200F, U+202A-202E, U+2066-2069), the line and paragraph separators (U+2028, U+2029), the byte order mark (U+FEFF),
 * U+FFFE and U+FFFF, and lone surrogates: with them, all that XML 1.0 cannot hold even as &#...;.
 */
const SHOWN_ESCAPED = /[\p{Cc}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ufffe\uffff]|\p{Surrogate}/gu
// the same, less what JSON.stringify escapes itself (C0, lone surrogates): a raw C0 in its text is a line break of its own
const JSON_UNSAFE = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ufffe\uffff]/g
const NAMED = Object.freeze({ '\n': '\\n', '\r': '\\r', '\t': '\\t' })
const MARKUP = Object.freeze({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })

function visibleEscape (c) {
  if (Object.hasOwn(NAMED, c)) return NAMED[c]
  const code = c.charCodeAt(0)
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
}

/**
 * Plain text (the text card, the terminal, the dashboard's and the exported page's text nodes): `\n`, `\r`, `\t` by name, another
 * character below U+0100 as `\xHH` (ESC is `\x1b`), one above as `\uHHHH`. A backslash stays as it is (a Windows path reads as
 * typed): the escapes show what was there rather than encode it exactly.
 */
export function shownText (value) {
  return String(value ?? '').replace(SHOWN_ESCAPED, visibleEscape)
}

/** The text card's and the terminal's name for shownText. */
export const terminalText = shownText

/**
 * Text in an XML 1.0 document (the JUnit report): shownText, then &, <, >, and both quotes as entities. A value is one line: the
 * line breaks of a document are its writer's, between values. Fit for an element's text and an attribute alike.
 */
export function xmlText (value) {
  return shownText(value).replace(/[&<>"']/g, function entity (c) {
    return c === "'" ? '&apos;' : MARKUP[c]
  })
}

/** Text in an HTML page written as a string (the class table's page): shownText, then &, <, >, and both quotes as entities. */
export function htmlText (value) {
  return shownText(value).replace(/[&<>"']/g, function entity (c) { return MARKUP[c] })
}

/**
 * A CSV field (RFC 4180): a number as it is; text through shownText, a leading ' before =, +, - or @ (a spreadsheet shows the
 * field rather than running it as a formula), quoted when it holds a comma or a quote, quotes doubled.
 */
export function csvField (value) {
  if (typeof value === 'number') return String(value)
  let text = shownText(value)
  if (/^[=+\-@]/.test(text)) text = `'${text}`
  return /[",]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

/**
 * A value as a JSON document that reads back the same (JSON.parse gives `value`), written so that no string in it shows reordered
 * or hidden where the file is read as text: JSON.stringify escapes C0 and lone surrogates; DEL, C1, the bidi marks, the
 * separators, U+FEFF, U+FFFE and U+FFFF become `\uHHHH` here (`space` as JSON.stringify's).
 */
export function jsonText (value, space) {
  return JSON.stringify(value, null, space).replace(JSON_UNSAFE, function unicodeEscape (c) {
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`
  })
}
