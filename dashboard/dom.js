/** The page's one DOM helper: text nodes, never HTML strings, every string through shownText (README.md). */
import { shownText } from '/lib/util/escape.js'

const SHOWN_ATTRIBUTES = Object.freeze(['title', 'aria-label', 'alt', 'placeholder']) // the attributes a reader sees as text

/** A small createElement: attributes, then children (strings become escaped text; a Node goes in as it is). */
export function make (tag, attributes = {}, ...children) {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, SHOWN_ATTRIBUTES.includes(name) ? shownText(value) : value)
  }
  node.append(...children.map(function shown (child) { return typeof child === 'string' ? shownText(child) : child }))
  return node
}

/** A name such as `gunzip.out` as children that may break after each dot, so a narrow column wraps it there. */
export function breakAfterDots (name) {
  return String(name).split(/(?<=\.)/).flatMap(function part (piece, i) {
    return i === 0 ? [piece] : [document.createElement('wbr'), piece]
  })
}

/** Say `text` in a message box; `kind` (info, error) styles it. */
export function say (box, text, kind) {
  box.textContent = text
  box.dataset.kind = kind
}

/** Save the context and clip it to the chart's area (the caller restores). */
export function clipToArea (ctx, area) {
  ctx.save()
  ctx.beginPath()
  ctx.rect(area.left, area.top, area.width, area.height)
  ctx.clip()
}
