/**
 * Words into lines, for a terminal's help and a chart's tooltip alike (the dashboard imports it as /lib/util/wrap.js: plain
 * functions, nothing of Node).
 */

/**
 * Words into lines of at most about `width` characters, cut at spaces; a no-break space holds two words together and comes out as
 * a space; a word longer than the width stands alone.
 * @param {{ indent?: string }} [options] what begins each line after the first
 */
export function wrapWords (text, width, { indent = '' } = {}) {
  const lines = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line)
      line = `${indent}${word}`
    } else {
      line = line === '' ? word : `${line} ${word}`
    }
  }
  if (line !== '') lines.push(line)
  return lines.map(function spaced (l) { return l.replaceAll('\u00a0', ' ') })
}
