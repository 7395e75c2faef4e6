/**
 * The layout (README.md "Layout", issue 17): dependencies point one way,
 * command-line tools -> experiments -> core, and the docs name files that
 * exist. Read from the source, no module loaded:
 * - nothing the server can load (lib/, experiments/, routes/, dashboard/,
 *   grader/, generators/, exercises/, server.js) imports or forks a file
 *   under scripts/ (only scripts/ and test/ may);
 * - lib/ reaches an experiment folder only through the registry,
 *   experiments/index.js;
 * - every `path/to/file.js` README.md and docs/ mention exists.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
// exercises/: the students' handlers, which the grader mounts
const SERVER_SIDE = Object.freeze(['lib', 'experiments', 'routes', 'dashboard', 'grader', 'generators', 'exercises', 'server.js'])

/** Every .js file under a folder of the project (or the file itself), repo-relative. */
function jsFiles (entry) {
  const full = path.join(ROOT, entry)
  if (!fs.existsSync(full)) return []
  if (fs.statSync(full).isFile()) return [entry]
  return fs.readdirSync(full, { recursive: true })
    .filter(function isJs (f) { return /\.m?js$/.test(f) && !f.split(path.sep).includes('node_modules') })
    .map(function relative (f) { return path.posix.join(entry, f.split(path.sep).join('/')) })
}

/**
 * The project files a source file imports or starts: static and dynamic
 * imports and `new URL('./x.js', import.meta.url)` by their relative
 * specifier, and `path.join(PROJECT_ROOT, 'dir', 'file.js')` (how the lab
 * names the scripts it forks) from the project's root.
 * @returns {Array<{ target: string, how: string }>} repo-relative targets
 */
export function referencesOf (file, source) {
  const found = []
  const relative = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*)(['"])(\.{1,2}\/[^'"]+)\1/g
  for (const m of source.matchAll(relative)) {
    found.push({ target: path.posix.normalize(path.posix.join(path.posix.dirname(file), m[2])), how: m[0] })
  }
  const fromRoot = /path\.(?:join|resolve)\(\s*PROJECT_ROOT\s*,([^)]*)\)/g
  for (const m of source.matchAll(fromRoot)) {
    const parts = [...m[1].matchAll(/'([^']+)'|"([^"]+)"/g)].map(function part (p) { return p[1] ?? p[2] })
    if (parts.length > 0) found.push({ target: path.posix.normalize(path.posix.join(...parts)), how: m[0] })
  }
  return found
}

function violations (entries, isForbidden) {
  const found = []
  for (const file of entries.flatMap(jsFiles)) {
    const source = fs.readFileSync(path.join(ROOT, file), 'utf8')
    for (const ref of referencesOf(file, source)) {
      if (isForbidden(ref.target, file)) found.push(`${file}: ${ref.how} -> ${ref.target}`)
    }
  }
  return found
}

describe('the layout (README.md, Layout)', function () {
  it('finds what a file imports, forks and names from the project root', function () {
    const refs = referencesOf('lib/experiments/load.js', [
      "import { a } from '../measure/stats.js'",
      "const m = await import('../../scripts/bench.js')",
      "const here = new URL('./child.js', import.meta.url)",
      "export const LOAD = path.join(PROJECT_ROOT, 'scripts', 'x.js')"
    ].join('\n'))
    assert.deepEqual(refs.map(function target (r) { return r.target }),
      ['lib/measure/stats.js', 'scripts/bench.js', 'lib/experiments/child.js', 'scripts/x.js'])
  })

  it('nothing the server can load imports or forks a file under scripts/', function () {
    const found = violations(SERVER_SIDE, function inScripts (target) { return target === 'scripts' || target.startsWith('scripts/') })
    assert.deepEqual(found, [], 'scripts/ holds command-line tools only: move what the lab needs to lib/ or to its experiment\'s folder')
  })

  it('lib/ reaches an experiment folder only through the registry, experiments/index.js', function () {
    const found = violations(['lib'], function intoAFolder (target) { return target.startsWith('experiments/') && target !== 'experiments/index.js' })
    assert.deepEqual(found, [], 'lib/ is the core: hand it the registry, or add the export to experiments/index.js')
  })

  it('every experiment in the registry is a folder with index.js and bench.js, and every folder is registered', function () {
    const registry = fs.readFileSync(path.join(ROOT, 'experiments', 'index.js'), 'utf8')
    const registered = [...registry.matchAll(/^import \* as \w+ from '\.\/([\w-]+)\/index\.js'$/gm)].map(function folder (m) { return m[1] })
    const folders = fs.readdirSync(path.join(ROOT, 'experiments'), { withFileTypes: true })
      .filter(function isDir (d) { return d.isDirectory() }).map(function name (d) { return d.name })
    assert.deepEqual([...registered].sort(), [...folders].sort())
    for (const name of folders) {
      for (const file of ['index.js', 'bench.js']) assert.ok(fs.existsSync(path.join(ROOT, 'experiments', name, file)), `experiments/${name}/${file}`)
    }
  })
})

describe('the docs name files that exist', function () {
  // generated by a run (git ignores them) or a placeholder for the reader's own file
  const NOT_IN_GIT = /^(?:\.\.\/)*(?:test-data|reports)\/|^path\/to\//
  const docs = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs'), { recursive: true })
    .filter(function isMarkdown (f) { return f.endsWith('.md') })
    .map(function relative (f) { return path.posix.join('docs', f.split(path.sep).join('/')) })]

  it('every path/to/file.js in README.md and docs/ is there', function () {
    const missing = []
    // a quoted specifier in a code sample is relative to the sample's own file: not a mention
    const mention = /(?<![\w/.:@'"-])((?:\.\.?\/)*[\w.-]+(?:\/[\w.-]+)+\.(?:js|mjs|json))(?![\w/-])/g
    for (const doc of docs) {
      const text = fs.readFileSync(path.join(ROOT, doc), 'utf8')
      for (const m of text.matchAll(mention)) {
        const named = m[1]
        if (NOT_IN_GIT.test(named)) continue
        // from the project's root (a mention) or from the page's folder (a link)
        const there = fs.existsSync(path.join(ROOT, named)) || fs.existsSync(path.join(ROOT, path.dirname(doc), named))
        if (!there) missing.push(`${doc}: ${named}`)
      }
    }
    assert.deepEqual(missing, [], 'the docs name files that are not there: fix the path')
  })
})
