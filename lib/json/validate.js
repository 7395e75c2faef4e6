/**
 * A byte-level JSON validator that finds the first byte which makes a text invalid. Slow next to
 * JSON.parse, it runs only after JSON.parse failed: both routes use it to name the same offset.
 * JSON's structure is ASCII, so bytes give byte offsets even in multi-byte or invalid UTF-8.
 */

const QUOTE = 0x22
const BACKSLASH = 0x5c

function isWhitespace (c) {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}

function isDigit (c) {
  return c >= 0x30 && c <= 0x39
}

function isHex (c) {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

function describe (bytes, i) {
  if (i >= bytes.length) return 'unexpected end of input'
  const c = bytes[i]
  if (c >= 0x20 && c < 0x7f) return `unexpected character '${String.fromCharCode(c)}'`
  return `unexpected byte 0x${c.toString(16).padStart(2, '0')}`
}

/** The first error in one JSON text, in bytes [start, end): `{ offset, reason }`, offset relative to `start`, or null. */
export function findJsonError (bytes, start = 0, end = bytes.length) {
  const view = start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end)
  return validate(view)
}

function validate (b) {
  const n = b.length
  const stack = [] // true = object, false = array
  let i = 0

  function fail (reason) {
    return { offset: i, reason: reason || describe(b, i) }
  }
  function skipWhitespace () {
    while (i < n && isWhitespace(b[i])) i++
  }
  // Each scan* returns an error or null and leaves i after the token.
  function scanString () {
    i++ // opening quote
    while (i < n) {
      const c = b[i]
      if (c === QUOTE) { i++; return null }
      if (c === BACKSLASH) {
        i++
        if (i >= n) return fail()
        const e = b[i]
        if (e === 0x75) { // \uXXXX
          for (let k = 0; k < 4; k++) {
            i++
            if (i >= n || !isHex(b[i])) return fail(i >= n ? undefined : 'bad \\u escape')
          }
          i++
          continue
        }
        if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
          i++
          continue
        }
        return fail('bad escape')
      }
      if (c < 0x20) return fail('control character in string')
      i++
    }
    return fail('unterminated string')
  }
  function scanDigits () {
    if (i >= n || !isDigit(b[i])) return fail(i >= n ? undefined : 'expected a digit')
    while (i < n && isDigit(b[i])) i++
    return null
  }
  function scanNumber () {
    if (b[i] === 0x2d) i++
    if (i < n && b[i] === 0x30) {
      i++
    } else {
      const e = scanDigits()
      if (e) return e
    }
    if (i < n && b[i] === 0x2e) {
      i++
      const e = scanDigits()
      if (e) return e
    }
    if (i < n && (b[i] === 0x65 || b[i] === 0x45)) {
      i++
      if (i < n && (b[i] === 0x2b || b[i] === 0x2d)) i++
      const e = scanDigits()
      if (e) return e
    }
    return null
  }
  function scanLiteral (word) {
    for (let k = 0; k < word.length; k++, i++) {
      if (i >= n || b[i] !== word.charCodeAt(k)) return fail()
    }
    return null
  }
  // Returns error or null; on a container start, pushes and returns 'open'.
  function scanValue () {
    skipWhitespace()
    if (i >= n) return fail()
    const c = b[i]
    if (c === 0x7b) { stack.push(true); i++; return 'open' }
    if (c === 0x5b) { stack.push(false); i++; return 'open' }
    if (c === QUOTE) return scanString()
    if (c === 0x2d || isDigit(c)) return scanNumber()
    if (c === 0x74) return scanLiteral('true')
    if (c === 0x66) return scanLiteral('false')
    if (c === 0x6e) return scanLiteral('null')
    return fail()
  }
  function scanKey () {
    skipWhitespace()
    if (i >= n || b[i] !== QUOTE) return fail()
    const e = scanString()
    if (e) return e
    skipWhitespace()
    if (i >= n || b[i] !== 0x3a) return fail()
    i++
    return null
  }

  let r = scanValue()
  for (;;) {
    if (r && r !== 'open') return r
    if (r === 'open') {
      // first member or element, or an empty container
      skipWhitespace()
      const isObject = stack[stack.length - 1]
      if (i < n && b[i] === (isObject ? 0x7d : 0x5d)) {
        stack.pop()
        i++
      } else {
        if (isObject) {
          const e = scanKey()
          if (e) return e
        }
        r = scanValue()
        continue
      }
    }
    // after a value
    skipWhitespace()
    if (stack.length === 0) {
      return i < n ? fail('unexpected content after the JSON value') : null
    }
    const isObject = stack[stack.length - 1]
    if (i >= n) return fail()
    if (b[i] === 0x2c) {
      i++
      if (isObject) {
        const e = scanKey()
        if (e) return e
      }
      r = scanValue()
      continue
    }
    if (b[i] === (isObject ? 0x7d : 0x5d)) {
      stack.pop()
      i++
      r = null
      continue
    }
    return fail()
  }
}
