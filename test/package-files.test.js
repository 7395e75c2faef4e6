/**
 * What `npm pack` ships (package.json "files", "bin"), read from the source
 * without packing: every file a shipped module imports or starts by path is
 * shipped too, every package a shipped module imports is a dependency (never
 * a dev dependency: `npm install` of the tarball leaves those out), and the
 * bin's commands run files that ship. The slow part, the tarball packed,
 * installed and run, is test/slow/package.test.js.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { builtinModules } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { readCommand } from '../bin/streamlab.js'
import { LESSON_RUNS_DIR } from '../lib/runs/lessons.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
/** The one entry of "files" in docs/: the lessons' runs, which every lab lists as `lesson-<name>` (lib/runs/lessons.js). */
const LESSON_RUNS = 'docs/figures/*.run.json'

/** An entry of "files" with a `*` (`docs/figures/*.run.json`): any name in its folder. */
function globOf (entry) {
  return new RegExp(`^${entry.split('*').map(function literal (part) { return part.replace(/[.+?^${}()|[\]\\]/g, '\\$&') }).join('[^/]*')}$`)
}

/** Whether npm ships `file` (repo-relative, forward slashes) by "files": a listed file, one a glob names, or one under a listed folder. */
function shipped (file) {
  return file === 'package.json' || file === 'README.md' || PKG.files.some(function covers (entry) {
    if (entry.includes('*')) return globOf(entry).test(file)
    return entry.endsWith('/') ? file.startsWith(entry) : file === entry
  })
}

/** Every .js file npm ships. */
function shippedModules () {
  const all = []
  for (const entry of PKG.files) {
    const full = path.join(ROOT, entry)
    if (entry.includes('*') || !fs.existsSync(full)) continue
    if (fs.statSync(full).isFile()) {
      all.push(entry)
      continue
    }
    for (const f of fs.readdirSync(full, { recursive: true })) {
      const rel = path.posix.join(entry, f.split(path.sep).join('/'))
      if (/\.[cm]?js$/.test(rel)) all.push(rel)
    }
  }
  return all
}

/** The project files a module imports, or names from the project's root or its own folder to start. */
function filesNamed (file, source) {
  const found = []
  for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*)(['"])(\.{1,2}\/[^'"]+)\1/g)) {
    found.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), m[2])))
  }
  for (const m of source.matchAll(/path\.(?:join|resolve)\(\s*PROJECT_ROOT\s*,([^)]*)\)/g)) {
    const parts = [...m[1].matchAll(/'([^']+)'|"([^"]+)"/g)].map(function part (p) { return p[1] ?? p[2] })
    if (parts.length > 0) found.push(path.posix.normalize(path.posix.join(...parts)))
  }
  return found
}

/** The packages a module imports by name (static and dynamic imports, require and require.resolve). */
function packagesNamed (source) {
  const names = new Set()
  for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire(?:\.resolve)?\(\s*|import\.meta\.resolve\(\s*)(['"])([^.'"/][^'"]*)\1/g)) {
    const name = m[2]
    if (name.startsWith('node:') || builtinModules.includes(name)) continue
    // a specifier in a comment's example is no package name
    if (!/^(?:@[a-z0-9-~][\w.~-]*\/)?[a-z0-9-~][\w.~-]*(?:\/\S*)?$/.test(name)) continue
    names.add(name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0])
  }
  return names
}

describe('what npm pack ships (package.json "files")', function () {
  const modules = shippedModules()

  it('ships every module a shipped module imports or starts (data folders it writes to aside)', function () {
    const missing = []
    for (const file of modules) {
      const source = fs.readFileSync(path.join(ROOT, file), 'utf8')
      for (const target of filesNamed(file, source)) {
        // a folder it writes to (test-data, docs/figures with --figures) or reads if present (.git), not code
        if (!/\.[cm]?js$|\.json$|\.html$|\.css$/.test(target)) continue
        if (!shipped(target)) missing.push(`${file} -> ${target}`)
      }
    }
    assert.deepEqual(missing, [], 'add the file or its folder to package.json "files"')
  })

  it('imports no package that npm install of the tarball leaves out: each is a dependency', function () {
    const dependencies = Object.keys(PKG.dependencies)
    const wrong = []
    for (const file of modules) {
      for (const name of packagesNamed(fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
        // lib/measure/browser.js drives a browser for scripts/screenshots.js, which is not shipped
        if (file === 'lib/measure/browser.js' && name === 'playwright-core') continue
        if (!dependencies.includes(name)) wrong.push(`${file}: ${name}`)
      }
    }
    assert.deepEqual(wrong, [], 'a package the shipped code imports belongs in "dependencies"')
  })

  it('ships the bin and every file its commands run', function () {
    assert.deepEqual(PKG.bin, { streamlab: 'bin/streamlab.js' })
    assert.ok(shipped('bin/streamlab.js'))
    assert.ok(fs.readFileSync(path.join(ROOT, 'bin', 'streamlab.js'), 'utf8').startsWith('#!/usr/bin/env node\n'))
    for (const command of ['start', 'grade', 'bench', 'demo', 'runs']) {
      const { script } = readCommand([command, '--help'])
      assert.ok(shipped(path.relative(ROOT, script).split(path.sep).join('/')), command)
    }
    assert.deepEqual(readCommand(['bench', 'ingest', '--repeat', '3']).args, ['ingest', '--repeat', '3'])
    assert.match(readCommand(['grades']).problem, /no command "grades"/)
    assert.deepEqual(readCommand([]), { help: true })
  })

  it('ships no spec, doc, example or report; of docs/, the lessons\' runs alone', function () {
    for (const entry of PKG.files) assert.ok(!/^(test|docs|examples|reports|test-data)(\/|$)/.test(entry) || entry === LESSON_RUNS, entry)
  })

  it('ships every lesson\'s run that lib/runs/lessons.js serves, and no figures file beside it', function () {
    const dir = path.relative(ROOT, LESSON_RUNS_DIR).split(path.sep).join('/')
    const names = fs.readdirSync(LESSON_RUNS_DIR)
    const runs = names.filter(function isRun (n) { return n.endsWith('.run.json') })
    assert.ok(runs.includes('zip-bomb.run.json'))
    for (const name of runs) assert.ok(shipped(`${dir}/${name}`), name)
    for (const name of names.filter(function other (n) { return !n.endsWith('.run.json') })) assert.ok(!shipped(`${dir}/${name}`), name)
  })
})
