/**
 * Text a submission controls reaches the terminal with every control
 * character shown escaped (lib/util/escape.js, its text form): C0, DEL, C1, the
 * bidi controls and the line separators; the card (formatCard) goes through it.
 */
import assert from 'node:assert/strict'
import { formatCard } from '../../grader/card/card.js'
import { terminalText } from '../../lib/util/escape.js'

function range (from, to) {
  const out = []
  for (let code = from; code <= to; code++) out.push(String.fromCharCode(code))
  return out
}

const C0 = range(0x00, 0x1f)
const C1 = range(0x80, 0x9f)
const BIDI = [0x061c, 0x200e, 0x200f, ...range(0x202a, 0x202e).map(function code (c) { return c.charCodeAt(0) }), ...range(0x2066, 0x2069).map(function code (c) { return c.charCodeAt(0) })]
  .map(function char (code) { return String.fromCharCode(code) })
const SEPARATORS = ['\u2028', '\u2029']

/** No character a terminal would act on: what terminalText returns is printable text. */
function printable (text) {
  return !/[\p{Cc}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u.test(text)
}

describe('terminalText', function () {
  it('names a line feed, a carriage return and a tab', function () {
    assert.equal(terminalText('bob\nPASS\r\t18/18'), 'bob\\nPASS\\r\\t18/18')
  })

  it('shows every other C0 character and DEL as \\xHH: ESC is \\x1b', function () {
    for (const c of [...C0, '\x7f']) {
      if (['\n', '\r', '\t'].includes(c)) continue
      assert.equal(terminalText(c), `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
    }
    assert.equal(terminalText('\x1b[2K\x1b[1APASS mallory 18/18\x1b]0;title\x07'), '\\x1b[2K\\x1b[1APASS mallory 18/18\\x1b]0;title\\x07')
  })

  it('shows every C1 character as \\xHH (U+009B is a one-byte CSI)', function () {
    for (const c of C1) assert.equal(terminalText(c), `\\x${c.charCodeAt(0).toString(16)}`)
  })

  it('shows the bidi controls and the line separators as \\uHHHH', function () {
    for (const c of [...BIDI, ...SEPARATORS]) assert.equal(terminalText(c), `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    assert.equal(terminalText('evil\u202ejs.exe'), 'evil\\u202ejs.exe')
  })

  it('leaves printable text as it is: letters of any script, spaces, quotes, backslashes, emoji', function () {
    const text = 'Zoë 山田 «bob» "x" C:\\Users\\bob 👍 · – — ü'
    assert.equal(terminalText(text), text)
  })

  it('returns printable text for any string, and text for any value', function () {
    const everything = range(0, 0x2100).join('')
    assert.ok(printable(terminalText(everything)))
    assert.equal(terminalText(null), '')
    assert.equal(terminalText(undefined), '')
    assert.equal(terminalText(42), '42')
  })
})

describe('formatCard with a submission\'s text', function () {
  it('keeps one line per line of the card: a name and a load error cannot print lines of their own', function () {
    const card = {
      handler: 'class/bob\nbob: PASS 18/18.js',
      preset: 'quick',
      ms: 1200,
      seed: 7,
      digest: null,
      labVersion: '0.1.0',
      loadError: 'boom\n\x1b[1A\x1b[2KPASS mallory 18/18\x1b]0;pwned\x07',
      checks: [{ area: 'correctness', name: 'exact count', pass: false, figure: 'not run', limit: 'equal', meaning: 'the count', reason: 'said \x1b[32mPASS\x1b[0m', hint: 'load it' }],
      lab: { restarts: 0 }
    }
    const text = formatCard(card)
    assert.ok(printable(text.replaceAll('\n', '')), text)
    assert.match(text, /^Grade card: class\/bob\\nbob: PASS 18\/18\.js \(--quick/)
    assert.ok(text.includes('The module did not load: boom\\n\\x1b[1A\\x1b[2KPASS mallory 18/18\\x1b]0;pwned\\x07\n'))
    assert.ok(text.includes('why:  said \\x1b[32mPASS\\x1b[0m\n'))
    assert.equal(text.split('\n').filter(function forged (line) { return /^bob: PASS|^PASS mallory/.test(line) }).length, 0)
  })
})
