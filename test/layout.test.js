/**
 * The layout (README.md "What is inside"): dependencies point one way,
 * command-line tools -> the app -> routes and experiments -> core, and the
 * docs name files that exist. Read from the source, no module loaded:
 * - nothing the server can load (lib/, app.js, worker.js, server.js,
 *   experiments/, routes/, dashboard/, grader/, generators/, exercises/)
 *   imports or forks a file under scripts/ (only scripts/ and test/ may);
 * - lib/ is the bottom: it imports and forks nothing of routes/,
 *   experiments/, grader/, scripts/ or generators/, and imports no file at the project's
 *   root (the app, the worker, the entry point);
 * - the app, the worker and routes/ reach an experiment folder only through
 *   the registry, experiments/index.js;
 * - lib/ is folders by concern in layers (lib/README.md's table): a folder
 *   imports only the folders above it and the ones its README names, and
 *   lib/util/ nothing of the lab;
 * - every `path/to/file.js` README.md and docs/ mention exists;
 * - no source file passes 400 lines.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
// exercises/: the students' handlers, which the grader mounts
const SERVER_SIDE = Object.freeze(['lib', 'app.js', 'worker.js', 'server.js', 'experiments', 'routes', 'dashboard', 'grader', 'generators', 'exercises'])
/** The layers above lib/: it may reach none of them. */
const ABOVE_LIB = Object.freeze(['routes/', 'experiments/', 'grader/', 'scripts/', 'generators/'])

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
 * imports (`import`) by their relative specifier, and the files it names
 * to fork or run in a thread (`path`): `new URL('./x.js', import.meta.url)`
 * and `path.join(PROJECT_ROOT, 'dir', 'file.js')` from the project's root.
 * @returns {Array<{ target: string, how: string, kind: 'import' | 'path' }>} repo-relative targets
 */
export function referencesOf (file, source) {
  const found = []
  const relative = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*)(['"])(\.{1,2}\/[^'"]+)\2/g
  for (const m of source.matchAll(relative)) {
    const kind = m[1].startsWith('new URL') ? 'path' : 'import'
    found.push({ target: path.posix.normalize(path.posix.join(path.posix.dirname(file), m[3])), how: m[0], kind })
  }
  const fromRoot = /path\.(?:join|resolve)\(\s*PROJECT_ROOT\s*,([^)]*)\)/g
  for (const m of source.matchAll(fromRoot)) {
    const parts = [...m[1].matchAll(/'([^']+)'|"([^"]+)"/g)].map(function part (p) { return p[1] ?? p[2] })
    if (parts.length > 0) found.push({ target: path.posix.normalize(path.posix.join(...parts)), how: m[0], kind: 'path' })
  }
  return found
}

/**
 * Whether a reference from lib/ reaches above it: any file of routes/, experiments/, grader/ or
 * scripts/, or an import of a file at the project's root (app.js mounts the routes and experiments).
 * A root entry point it starts as a process by path (the worker, server.js) is named in its folder's
 * README instead.
 */
export function reachesAboveLib (ref) {
  if (ABOVE_LIB.some(function under (folder) { return ref.target.startsWith(folder) })) return true
  return ref.kind === 'import' && !ref.target.includes('/')
}

/** The most lines a source file may have (the exercises and the specs aside: a class reads them whole). */
const ROOM_LINES = 400
/** Where the lab's own source is, every .js of it. */
const SOURCE_FOLDERS = Object.freeze(['lib', 'routes', 'experiments', 'dashboard', 'grader', 'generators', 'scripts', 'bin', 'examples', 'app.js', 'worker.js', 'server.js'])

/** The files over ROOM_LINES, as `file: N lines`. */
function roomsOver (files, linesOf = function countLines (file) { return fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').length - 1 }) {
  const over = []
  for (const file of files) {
    const lines = linesOf(file)
    if (lines > ROOM_LINES) over.push(`${file}: ${lines} lines`)
  }
  return over
}

function violations (entries, isForbidden) {
  const found = []
  for (const file of entries.flatMap(jsFiles)) {
    const source = fs.readFileSync(path.join(ROOT, file), 'utf8')
    for (const ref of referencesOf(file, source)) {
      if (isForbidden(ref.target, file, ref)) found.push(`${file}: ${ref.how} -> ${ref.target}`)
    }
  }
  return found
}

describe('the layout (README.md, What is inside)', function () {
  it('finds what a file imports, forks and names from the project root', function () {
    const refs = referencesOf('lib/experiments/load.js', [
      "import { a } from '../measure/stats.js'",
      "const m = await import('../../scripts/bench.js')",
      "const here = new URL('./child.js', import.meta.url)",
      "export const LOAD = path.join(PROJECT_ROOT, 'scripts', 'x.js')"
    ].join('\n'))
    assert.deepEqual(refs.map(function target (r) { return `${r.kind} ${r.target}` }),
      ['import lib/measure/stats.js', 'import scripts/bench.js', 'path lib/experiments/child.js', 'path scripts/x.js'])
  })

  it('nothing the server can load imports or forks a file under scripts/', function () {
    const found = violations(SERVER_SIDE, function inScripts (target) { return target === 'scripts' || target.startsWith('scripts/') })
    assert.deepEqual(found, [], 'scripts/ holds command-line tools only: move what the lab needs to lib/ or to its experiment\'s folder')
  })

  it(`no source file is over ${ROOM_LINES} lines: a room that grows past it is split by what it does`, function () {
    assert.deepEqual(roomsOver(SOURCE_FOLDERS.flatMap(jsFiles)), [])
  })

  it('names a room over the limit, and only such a room', function () {
    const planted = [{ file: 'lib/big.js', lines: ROOM_LINES + 1 }, { file: 'lib/small.js', lines: ROOM_LINES }]
    assert.deepEqual(roomsOver(['lib/big.js', 'lib/small.js'], function count (file) { return planted.find(function named (p) { return p.file === file }).lines }), [`lib/big.js: ${ROOM_LINES + 1} lines`])
  })

  it('lib/ imports nothing above it: routes/, experiments/, grader/, scripts/ or the app', function () {
    const found = violations(['lib'], function aboveLib (target, file, ref) { return reachesAboveLib(ref) })
    assert.deepEqual(found, [], 'lib/ is the core: move the code that needs the layer above into that layer (app.js mounts routes and experiments)')
  })

  it('the app, the worker and the routes reach an experiment folder only through the registry, experiments/index.js', function () {
    const found = violations(['app.js', 'worker.js', 'routes'], function intoAFolder (target) { return target.startsWith('experiments/') && target !== 'experiments/index.js' })
    assert.deepEqual(found, [], 'add the export to experiments/index.js')
  })

  it('catches an import from lib/ into a layer above it, and lets lib/ start a root entry point by path', function () {
    const refs = referencesOf('lib/http/x.js', [
      "import { ingestRoutes } from '../../routes/ingest.js'",
      "import { uploadRoutes } from '../../experiments/index.js'",
      "const grade = await import('../../grader/index.js')",
      "import { createApp } from '../../app.js'",
      "export const TOOL = path.join(PROJECT_ROOT, 'scripts', 'bench.js')",
      "export const WORKER = path.join(PROJECT_ROOT, 'worker.js')",
      "import { sendError } from './send-error.js'"
    ].join('\n'))
    assert.deepEqual(refs.filter(reachesAboveLib).map(function target (r) { return r.target }),
      ['routes/ingest.js', 'experiments/index.js', 'grader/index.js', 'app.js', 'scripts/bench.js'])
  })

  it('every experiment in the registry is a folder with index.js and bench.js, every bench-only one a folder with bench.js alone, and every folder is registered', function () {
    const registry = fs.readFileSync(path.join(ROOT, 'experiments', 'index.js'), 'utf8')
    const registered = [...registry.matchAll(/^import \* as \w+ from '\.\/([\w-]+)\/index\.js'$/gm)].map(function folder (m) { return m[1] })
    const benchOnly = [...(registry.match(/^export const BENCH_ONLY = Object\.freeze\(\[([^\]]*)\]\)$/m)?.[1] ?? '').matchAll(/'([\w-]+)'/g)].map(function folder (m) { return m[1] })
    const folders = fs.readdirSync(path.join(ROOT, 'experiments'), { withFileTypes: true })
      .filter(function isDir (d) { return d.isDirectory() }).map(function name (d) { return d.name })
    assert.deepEqual([...registered, ...benchOnly].sort(), [...folders].sort())
    for (const name of registered) {
      for (const file of ['index.js', 'bench.js']) assert.ok(fs.existsSync(path.join(ROOT, 'experiments', name, file)), `experiments/${name}/${file}`)
    }
    for (const name of benchOnly) {
      assert.deepEqual(fs.readdirSync(path.join(ROOT, 'experiments', name)), ['bench.js'], `experiments/${name}/ runs no experiment: bench.js alone`)
    }
  })
})

/** lib/README.md's table: the folders of lib/, top (imports nothing of the lab) to bottom. */
function libLayers () {
  const table = fs.readFileSync(path.join(ROOT, 'lib', 'README.md'), 'utf8')
  return [...table.matchAll(/^\| \[(\w+)\/\]/gm)].map(function folder (m) { return m[1] })
}

/**
 * A folder's README line, "May use: util, errors; outside lib/: generators/, server.js (why).",
 * as the names it lists: lib/ folders, then paths outside lib/ (a trailing / is a folder).
 */
export function mayUse (readme) {
  const line = readme.match(/^May use: (.*)$/m)
  if (!line) return null
  if (/^nothing of the lab/.test(line[1])) return { inside: [], outside: [] }
  const [inside, outside = ''] = line[1].split(/;\s*outside lib\/:/)
  const names = function names (list) {
    return list.replace(/\([^)]*\)/g, '').replace(/\.\s*$/, '').split(',')
      .map(function trim (n) { return n.trim() }).filter(Boolean)
  }
  return { inside: names(inside), outside: names(outside) }
}

/** What `target` is to lib/'s layers: a lib/ folder's name, or the repo path for anything outside lib/. */
function roomOf (target) {
  return target.startsWith('lib/') ? target.split('/')[1] : target
}

describe('lib/ by concern (lib/README.md)', function () {
  const layers = libLayers()
  const folders = fs.readdirSync(path.join(ROOT, 'lib'), { withFileTypes: true })
    .filter(function isDir (d) { return d.isDirectory() }).map(function name (d) { return d.name })

  it('reads the layers from lib/README.md and the names from a README line', function () {
    assert.ok(layers.length >= 10, `lib/README.md lists ${layers.length} folders`)
    assert.deepEqual(mayUse('x\n\nMay use: util, errors; outside lib/: generators/, server.js (the lab it starts).\n'), { inside: ['util', 'errors'], outside: ['generators/', 'server.js'] })
    assert.deepEqual(mayUse('May use: nothing of the lab (Node and npm packages only).'), { inside: [], outside: [] })
    assert.equal(mayUse('no line'), null)
  })

  it('holds no file of its own besides its README: every module is in a folder by concern', function () {
    const loose = fs.readdirSync(path.join(ROOT, 'lib')).filter(function isJs (f) { return f.endsWith('.js') })
    assert.deepEqual(loose, [], 'move the file into the folder of its concern (lib/README.md)')
  })

  it('lists every folder in the table, once, and every folder opens with a README that says what it may use', function () {
    assert.deepEqual([...layers].sort(), [...folders].sort())
    for (const folder of folders) {
      const readme = path.join(ROOT, 'lib', folder, 'README.md')
      assert.ok(fs.existsSync(readme), `lib/${folder}/README.md`)
      assert.notEqual(mayUse(fs.readFileSync(readme, 'utf8')), null, `lib/${folder}/README.md has no "May use:" line`)
    }
  })

  it('a folder names only folders above it, and imports only what it names', function () {
    const found = []
    for (const folder of layers) {
      const { inside, outside } = mayUse(fs.readFileSync(path.join(ROOT, 'lib', folder, 'README.md'), 'utf8'))
      for (const name of inside) {
        if (layers.indexOf(name) < 0 || layers.indexOf(name) >= layers.indexOf(folder)) found.push(`lib/${folder}/README.md names ${name}, which is not above it`)
      }
      found.push(...violations([`lib/${folder}`], function notAllowed (target) {
        const room = roomOf(target)
        if (room === folder) return false
        if (target.startsWith('lib/')) return !inside.includes(room)
        if (!/\.m?js$/.test(target)) return false // a folder it writes to (test-data), not code
        return !outside.some(function under (o) { return o.endsWith('/') ? target.startsWith(o) : target === o })
      }))
    }
    assert.deepEqual(found, [], 'an import points down the table (lib/README.md): move the code, or name the folder in the README if it is above')
  })

  it('catches an import that points down the table', function () {
    const refs = referencesOf('lib/util/x.js', "import { a } from '../ingest/streamed.js'")
    assert.equal(roomOf(refs[0].target), 'ingest')
    assert.ok(layers.indexOf('ingest') > layers.indexOf('util'))
  })
})

describe('the docs name files that exist', function () {
  // generated by a run (git ignores them), a placeholder for the reader's own file, or a student's
  // repository as docs/ci/github-classroom.yml lays it out (src/handler.mjs)
  const NOT_IN_GIT = /^(?:\.\.\/)*(?:test-data|reports)\/|^path\/to\/|^src\/handler\.mjs$/
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

/** The most lines the lab's source may have, every .js of SOURCE_FOLDERS together: the house shrinks as it grows. */
export const SOURCE_LINE_BUDGET = 46000
/** The longest source line, in characters. */
export const LINE_WIDTH = 140
/** The longest comment block in lib/, in lines: a design note goes to its folder's README. */
export const COMMENT_BLOCK_LINES = 12

/** Whether a line is part of a comment block: `//`, `/*`, ` *` or `*\/` first on the line. */
function isCommentLine (line) {
  return /^\s*(\/\/|\/\*|\*)/.test(line)
}

/** A source text's lines over `width` characters, as `file:line (N chars)`. */
export function longLines (file, source, width = LINE_WIDTH) {
  return source.split('\n').flatMap(function over (line, i) { return line.length > width ? [`${file}:${i + 1} (${line.length} chars)`] : [] })
}

/** A source text's comment blocks over `most` lines, as `file:first-last (N lines)`. */
export function longCommentBlocks (file, source, most = COMMENT_BLOCK_LINES) {
  const found = []
  const lines = source.split('\n')
  let start = -1
  for (let i = 0; i <= lines.length; i++) {
    if (i < lines.length && isCommentLine(lines[i])) {
      if (start < 0) start = i
      continue
    }
    if (start >= 0 && i - start > most) found.push(`${file}:${start + 1}-${i} (${i - start} lines)`)
    start = -1
  }
  return found
}

function sourceOf (file) {
  return fs.readFileSync(path.join(ROOT, file), 'utf8')
}

describe('the house\'s budgets (test/README.md, "The house\'s budgets")', function () {
  const files = SOURCE_FOLDERS.flatMap(jsFiles)

  it(`the lab's source is at most ${SOURCE_LINE_BUDGET} lines: a feature that adds lines takes them from elsewhere`, function () {
    const lines = files.reduce(function sum (n, file) { return n + sourceOf(file).split('\n').length - 1 }, 0)
    assert.ok(lines <= SOURCE_LINE_BUDGET, `${lines} source lines, over the budget of ${SOURCE_LINE_BUDGET}`)
  })

  it(`no source line is over ${LINE_WIDTH} characters`, function () {
    assert.deepEqual(files.flatMap(function read (file) { return longLines(file, sourceOf(file)) }), [])
  })

  it(`no comment block in lib/ is over ${COMMENT_BLOCK_LINES} lines: a design note belongs in the folder's README`, function () {
    const found = jsFiles('lib').flatMap(function read (file) { return longCommentBlocks(file, sourceOf(file)) })
    assert.deepEqual(found, [])
  })

  it('names a long line and a long comment block, and only those', function () {
    assert.deepEqual(longLines('a.js', `${'x'.repeat(LINE_WIDTH)}\n${'y'.repeat(LINE_WIDTH + 1)}\n`), [`a.js:2 (${LINE_WIDTH + 1} chars)`])
    const block = function block (n) { return ['/**', ...Array(n - 2).fill(' * why'), ' */'].join('\n') }
    const source = [block(COMMENT_BLOCK_LINES), 'const a = 1', '// one', 'const b = 2', block(COMMENT_BLOCK_LINES + 1), 'const c = 3'].join('\n')
    const first = COMMENT_BLOCK_LINES + 4
    assert.deepEqual(longCommentBlocks('a.js', source), [`a.js:${first}-${first + COMMENT_BLOCK_LINES} (${COMMENT_BLOCK_LINES + 1} lines)`])
  })
})
