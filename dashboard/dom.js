/**
 * The page's one DOM helper: elements are built with text nodes, never from
 * HTML strings, so nothing a server sends can become markup.
 */

/**
 * A small createElement: attributes, then children (strings become text).
 * @param {string} tag
 * @param {Record<string, string>} [attributes]
 * @param {...(Node|string)} children
 * @returns {HTMLElement}
 */
export function make (tag, attributes = {}, ...children) {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value)
  node.append(...children)
  return node
}
