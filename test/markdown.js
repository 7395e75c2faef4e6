/**
 * Reading the docs as the specs that hold them do: which pages there are,
 * their prose without code, their links and their headings' anchors.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

/**
 * README.md and every Markdown page under docs/ and exercises/, as paths from the root, '/'-separated.
 * @param {{ generated?: boolean }} [which] generated: include docs/figures' tables (written by the benches)
 */
export function markdownFiles ({ generated = true } = {}) {
  const files = ['README.md']
  for (const dir of ['docs', 'exercises']) {
    for (const f of fs.readdirSync(path.join(ROOT, dir), { recursive: true })) {
      const file = path.posix.join(dir, f.split(path.sep).join('/'))
      if (!file.endsWith('.md')) continue
      if (!generated && file.startsWith('docs/figures/') && file !== 'docs/figures/README.md') continue
      files.push(file)
    }
  }
  return files.sort()
}

export function readPage (file) {
  return fs.readFileSync(path.join(ROOT, file), 'utf8')
}

/**
 * A page's lines with fenced code blanked (so line numbers stay), and, unless `keepInlineCode`,
 * inline code blanked too.
 * @returns {string[]}
 */
export function proseLines (markdown, { keepInlineCode = false } = {}) {
  let fence = null
  return markdown.split('\n').map(function prose (line) {
    const opener = /^\s*(`{3,}|~{3,})/.exec(line)
    if (fence === null && opener) { fence = opener[1]; return '' }
    if (fence !== null) {
      if (line.trim().startsWith(fence)) fence = null
      return ''
    }
    return keepInlineCode ? line : line.replace(/`[^`]*`/g, function blank (code) { return ' '.repeat(code.length) })
  })
}

/** The lines inside fenced code blocks and the inline code spans of a page, each with its line number. */
export function codeSnippets (markdown) {
  const snippets = []
  let fence = null
  markdown.split('\n').forEach(function read (line, k) {
    const opener = /^\s*(`{3,}|~{3,})/.exec(line)
    if (fence === null && opener) { fence = opener[1]; return }
    if (fence !== null) {
      if (line.trim().startsWith(fence)) fence = null
      else snippets.push({ line: k + 1, text: line })
      return
    }
    for (const m of line.matchAll(/`([^`]+)`/g)) snippets.push({ line: k + 1, text: m[1] })
  })
  return snippets
}

/**
 * Every link of a page's prose: inline `[text](dest)` and `![alt](dest)`, reference definitions
 * `[label]: dest`, and `href`/`src` attributes.
 * @returns {Array<{ line: number, text: string, dest: string }>}
 */
export function linksOf (markdown) {
  const links = []
  proseLines(markdown).forEach(function read (line, k) {
    // in a table cell a pipe is written \| (GitHub's tables), also inside a link
    for (const m of line.matchAll(/!?\[((?:[^\]\\]|\\.)*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ line: k + 1, text: m[1], dest: m[2].replaceAll('\\|', '|') })
    const definition = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(line)
    if (definition) links.push({ line: k + 1, text: '', dest: definition[1] })
    for (const m of line.matchAll(/\b(?:href|src)="([^"]+)"/g)) links.push({ line: k + 1, text: '', dest: m[1] })
  })
  return links
}

/** GitHub's anchor for a heading's text. */
export function slug (heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** The anchors a page offers: its headings' slugs (numbered as GitHub numbers repeats) and explicit ids. */
export function anchorsOf (markdown) {
  const anchors = new Set()
  const seen = new Map()
  for (const line of proseLines(markdown, { keepInlineCode: true })) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading) {
      const base = slug(heading[1])
      const n = seen.get(base) ?? 0
      anchors.add(n === 0 ? base : `${base}-${n}`)
      seen.set(base, n + 1)
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1])
  }
  return anchors
}

let tracked = null
/** The files git tracks, and those it would (not ignored), '/'-separated from the root. */
export function trackedFiles () {
  tracked ??= new Set(execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n').filter(Boolean)
    .filter(function present (f) { return fs.existsSync(path.join(ROOT, f)) }))
  return tracked
}
