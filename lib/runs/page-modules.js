/**
 * The dashboard's modules as the page sees them: by URL, `/x.js` for dashboard/x.js and `/lib/a/b.js` for lib/a/b.js (the modules
 * the page shares with the lab: a record's rules, compare's figures). The dashboard route serves a lib module only when the
 * page's imports reach it (`sharedModules`), and an exported run page (run-page.js) gets them all as one script
 * (`bundleModules`), because a page opened from disk can load no module file. More: README.md, "page-modules.js".
 */
import fs from 'node:fs'
import path from 'node:path'
import { PROJECT_ROOT } from '../util/project-root.js'

export const DASHBOARD_DIR = path.join(PROJECT_ROOT, 'dashboard')
const LIB_DIR = path.join(PROJECT_ROOT, 'lib')

const IMPORT = /^import\s*\{([^}]*)\}\s*from\s*'([^']+)'[ \t]*;?[ \t]*$/gm
const EXPORT = /^export (async function|function|const|let|class) ([A-Za-z_$][\w$]*)/gm
/** A line of ESM's syntax left once the two above are taken out: the transform knows no more. */
const UNKNOWN_SYNTAX = /^(import|export)\b.*$/m

/** The file a page URL names: `/x.js` in the dashboard's folder, `/lib/…/x.js` in lib/; null for anything else. */
export function moduleFile (url, { dashboardDir = DASHBOARD_DIR } = {}) {
  if (typeof url !== 'string' || !/^\/[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*\.js$/.test(url)) return null
  if (url.startsWith('/lib/')) return path.join(LIB_DIR, ...url.slice('/lib/'.length).split('/'))
  return url.indexOf('/', 1) === -1 ? path.join(dashboardDir, url.slice(1)) : null
}

/** A module's imports as `{ names: [[imported, local]], url }`, resolved against its own URL. */
function importsOf (url, text) {
  const out = []
  for (const [, names, specifier] of text.matchAll(IMPORT)) {
    if (!/^(\.\.?\/|\/)/.test(specifier)) throw new Error(`${url} imports "${specifier}": a page module imports page modules only`)
    const from = new URL(specifier, `http://page${url}`).pathname
    const pairs = names.split(',').map(function pair (part) { return part.trim() }).filter(Boolean).map(function split (part) {
      const [imported, local = imported] = part.split(/\s+as\s+/)
      return [imported.trim(), local.trim()]
    })
    out.push({ names: pairs, url: from })
  }
  return out
}

/**
 * The modules `entries` (page URLs, e.g. ['/main.js']) reach, each after the modules it imports (the order a bundle runs them in).
 * Throws for a module outside the page's URLs, one that is missing, a cycle, or syntax the bundle cannot take
 */
export function moduleGraph (entries, where = {}) {
  const graph = new Map()
  const visiting = new Set()
  function visit (url, from) {
    if (graph.has(url)) return
    if (visiting.has(url)) throw new Error(`${url} imports itself through ${from}: the page's modules may not import in a cycle`)
    const file = moduleFile(url, where)
    if (file === null) throw new Error(`${from ?? 'the page'} imports ${url}, which is not a page module`)
    const text = fs.readFileSync(file, 'utf8')
    const imports = importsOf(url, text)
    const exports = [...text.matchAll(EXPORT)].map(function name (m) { return m[2] })
    const rest = UNKNOWN_SYNTAX.exec(text.replace(IMPORT, '').replace(EXPORT, ''))
    if (rest !== null) throw new Error(`${url}: "${rest[0].slice(0, 80)}" is module syntax the page's bundle does not take ` +
      `(lib/runs/page-modules.js)`)
    visiting.add(url)
    for (const dependency of imports) visit(dependency.url, url)
    visiting.delete(url)
    graph.set(url, { file, text, imports, exports })
  }
  for (const entry of entries) visit(entry, null)
  return graph
}

/** The lib modules the page's entries reach (URL -> file), which the dashboard route may serve: nothing else of lib/. */
export function sharedModules (entries, where = {}) {
  const shared = new Map()
  for (const [url, module] of moduleGraph(entries, where)) if (url.startsWith('/lib/')) shared.set(url, module.file)
  return shared
}

/**
 * One classic script that runs `entry` and every module it reaches, each in its own function scope, in import order: a module's
 * imports become reads of the exports of one already run.
 */
export function bundleModules (entry, where = {}) {
  const parts = []
  for (const [url, module] of moduleGraph([entry], where)) {
    const byUrl = new Map(module.imports.map(function keyed (i) { return [i.url, i] }))
    const body = module.text
      .replace(IMPORT, function readExports (line, names, specifier) {
        const from = new URL(specifier, `http://page${url}`).pathname
        const fields = byUrl.get(from).names.map(function field ([imported, local]) { return imported === local ? local
          : `${imported}: ${local}` })
        return `const { ${fields.join(', ')} } = modules.get(${JSON.stringify(from)})`
      })
      .replace(EXPORT, function declare (line, kind, name) { return `${kind} ${name}` })
    const camel = function camel (m, c) { return c === undefined ? '' : c.toUpperCase() }
    const name = `module${url.replace(/\.js$/, '').replace(/[^A-Za-z0-9]+(.)?/g, camel)}`
    parts.push(`// ${url}\nmodules.set(${JSON.stringify(url)}, (function ${name} () {\n${body}\nreturn Object.freeze({ ` +
      `${module.exports.join(', ')} })\n})())`)
  }
  return `(function streamlabPage () {\n'use strict'\nconst modules = new Map()\n${parts.join('\n')}\n})()\n`
}
