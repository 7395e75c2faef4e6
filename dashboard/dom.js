/** The page's one DOM helper: text nodes, never HTML strings, every string through shownText (README.md). */
import { shownText } from '/lib/util/escape.js'

/** The attributes a reader sees as text. */
const SHOWN_ATTRIBUTES = Object.freeze(['title', 'aria-label', 'alt', 'placeholder'])

/**
 * A small createElement: attributes, then children (strings become escaped text; a Node, such as a Text node of a
 * multi-line JSON document, goes in as it is).
 */
export function make (tag, attributes = {}, ...children) {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, SHOWN_ATTRIBUTES.includes(name) ? shownText(value) : value)
  }
  node.append(...children.map(function shown (child) { return typeof child === 'string' ? shownText(child) : child }))
  return node
}

/**
 * A name such as a stream's `gunzip.out` as children that may break after each dot: a narrow column wraps it at the dot
 * rather than inside a word. Returns: the children to pass to make()
 */
export function breakAfterDots (name) {
  return String(name).split(/(?<=\.)/).flatMap(function part (piece, i) {
    return i === 0 ? [piece] : [document.createElement('wbr'), piece]
  })
}
