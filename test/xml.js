/**
 * A small, strict XML reader for the specs that read the grader's JUnit
 * (grader/card/junit.js): elements, attributes, text, the five entities and
 * character references, an XML declaration and comments. It refuses what a
 * JUnit consumer's parser would: a character XML 1.0 forbids, a raw `<` or
 * `&` in text, a tag closed out of order, an attribute given twice, anything
 * after the root. No DTDs, no CDATA, no namespaces: the grader writes none.
 */

// XML 1.0's Char production, negated
const FORBIDDEN = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u
const NAME = /^[A-Za-z_:][\w.:-]*/
const ENTITIES = Object.freeze({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" })

/**
 * @typedef {{ name: string, attributes: Record<string, string>, children: XmlElement[], text: string }} XmlElement
 *   `text`: the element's own text, its children's left out
 */

/**
 * Read an XML document.
 * @param {string} source
 * @returns {XmlElement} the root element
 * @throws {SyntaxError} saying what is wrong and where
 */
export function readXml (source) {
  const bad = FORBIDDEN.exec(source)
  if (bad) fail(`a character XML 1.0 forbids (U+${bad[0].codePointAt(0).toString(16).padStart(4, '0')})`, bad.index)
  let at = 0
  const stack = []
  let root = null
  const skipSpace = function skipSpace () { while (at < source.length && /\s/.test(source[at])) at++ }
  if (source.startsWith('<?xml')) {
    const end = source.indexOf('?>')
    if (end < 0) fail('an unclosed XML declaration', 0)
    at = end + 2
  }
  while (at < source.length) {
    if (stack.length === 0) {
      skipSpace()
      if (at >= source.length) break
      if (root !== null && !source.startsWith('<!--', at)) fail('content after the root element', at)
    }
    if (source.startsWith('<!--', at)) {
      const end = source.indexOf('-->', at + 4)
      if (end < 0) fail('an unclosed comment', at)
      at = end + 3
    } else if (source.startsWith('</', at)) {
      const name = NAME.exec(source.slice(at + 2))?.[0]
      const open = stack.pop()
      if (name === undefined || open === undefined || open.name !== name) fail(`</${name}> closes ${open ? `<${open.name}>` : 'nothing'}`, at)
      at += 2 + name.length
      skipSpace()
      if (source[at] !== '>') fail(`a malformed </${name}>`, at)
      at++
    } else if (source[at] === '<') {
      const parent = stack.at(-1)
      const element = readTag()
      if (parent !== undefined) parent.children.push(element)
      else root = element
    } else {
      const end = source.indexOf('<', at)
      const raw = source.slice(at, end < 0 ? source.length : end)
      if (stack.length === 0) fail('text outside the root element', at)
      stack.at(-1).text += decode(raw, at)
      at += raw.length
    }
  }
  if (stack.length > 0) fail(`<${stack.at(-1).name}> is never closed`, source.length)
  if (root === null) fail('no root element', 0)
  return root

  function readTag () {
    const name = NAME.exec(source.slice(at + 1))?.[0]
    if (name === undefined) fail('a tag without a name', at)
    at += 1 + name.length
    const element = { name, attributes: {}, children: [], text: '' }
    for (;;) {
      const before = at
      skipSpace()
      if (source.startsWith('/>', at)) {
        at += 2
        return element
      }
      if (source[at] === '>') {
        at++
        stack.push(element)
        return element
      }
      if (at === before) fail(`no space before an attribute of <${name}>`, at)
      const attribute = NAME.exec(source.slice(at))?.[0]
      if (attribute === undefined) fail(`a malformed attribute in <${name}>`, at)
      at += attribute.length
      skipSpace()
      if (source[at] !== '=') fail(`an attribute without a value in <${name}>`, at)
      at++
      skipSpace()
      const quote = source[at]
      if (quote !== '"' && quote !== "'") fail(`an unquoted attribute in <${name}>`, at)
      const end = source.indexOf(quote, at + 1)
      if (end < 0) fail(`an unclosed attribute in <${name}>`, at)
      const raw = source.slice(at + 1, end)
      if (raw.includes('<')) fail(`a raw < in an attribute of <${name}>`, at)
      if (Object.hasOwn(element.attributes, attribute)) fail(`the attribute ${attribute} given twice in <${name}>`, at)
      // a literal line break in an attribute reads back as a space (attribute-value normalisation)
      element.attributes[attribute] = decode(raw.replace(/[\t\n\r]/g, ' '), at)
      at = end + 1
    }
  }
}

/** Text with its entities and character references decoded; a raw `&` or `<` is an error. */
function decode (raw, offset) {
  if (raw.includes('<')) fail('a raw <', offset)
  return raw.replace(/&([^;\s&]*);?/g, function entity (whole, name) {
    if (!whole.endsWith(';')) fail(`a raw & (${whole})`, offset)
    if (Object.hasOwn(ENTITIES, name)) return ENTITIES[name]
    const code = /^#x([0-9a-fA-F]+)$/.exec(name)?.[1] ?? null
    const decimal = /^#([0-9]+)$/.exec(name)?.[1] ?? null
    const point = code !== null ? parseInt(code, 16) : decimal !== null ? Number(decimal) : NaN
    if (!Number.isInteger(point) || point > 0x10ffff) fail(`an unknown entity &${name};`, offset)
    const char = String.fromCodePoint(point)
    if (FORBIDDEN.test(char)) fail(`a reference to a character XML 1.0 forbids (&${name};)`, offset)
    return char
  })
}

function fail (what, at) {
  throw new SyntaxError(`not XML: ${what} at offset ${at}`)
}

/**
 * Every element named `name` under `element`, at any depth, in document order.
 * @param {XmlElement} element
 * @param {string} name
 * @returns {XmlElement[]}
 */
export function elementsNamed (element, name) {
  const found = []
  for (const child of element.children) {
    if (child.name === name) found.push(child)
    found.push(...elementsNamed(child, name))
  }
  return found
}
