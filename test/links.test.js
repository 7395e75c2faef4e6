/**
 * Every link and command the docs give works in a fresh clone: each relative link in README.md, docs/
 * and exercises/ reaches a file git tracks (and its #anchor a heading of that page), nothing links
 * outside the repository but public URLs, every `npm run X` quoted is a script of package.json, and
 * every --flag quoted beside a command is one that command's --help names.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { ROOT, markdownFiles, readPage, linksOf, anchorsOf, trackedFiles, codeSnippets } from './markdown.js'

const PACKAGE = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
const EXTERNAL = /^(?:https?:|mailto:)/

/**
 * Why a link of `page` does not hold, or null.
 * @param {string} page the linking page, from the root
 * @param {string} dest the link's destination
 */
export function brokenLink (page, dest, { files = trackedFiles(), anchors = pageAnchors } = {}) {
  if (EXTERNAL.test(dest)) return null
  if (/^[a-z][a-z0-9+.-]*:/i.test(dest)) return `${dest}: only https:// links leave the repository`
  const [target, fragment] = dest.split('#')
  const to = target === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), decodeURIComponent(target)))
  if (to.startsWith('../') || path.posix.isAbsolute(to)) return `${dest}: outside the repository (a clone has only its own tree)`
  const isDir = [...files].some(function under (f) { return f.startsWith(`${to.replace(/\/$/, '')}/`) })
  if (!files.has(to) && !isDir) return `${dest}: ${to} is not a file git tracks`
  if (fragment && to.endsWith('.md') && !anchors(to).has(fragment)) return `${dest}: ${to} has no heading #${fragment}`
  return null
}

const anchorCache = new Map()
function pageAnchors (file) {
  if (!anchorCache.has(file)) anchorCache.set(file, anchorsOf(readPage(file)))
  return anchorCache.get(file)
}

/** The script file a command runs: `npm run bench` -> scripts/bench.js, `npm start` -> server.js; null when it runs no node file. */
function scriptFile (command) {
  if (command === 'npm start') return 'server.js'
  const run = /^npm run ([\w:-]+)$/.exec(command)
  if (run) return /^node (\S+\.js)/.exec(PACKAGE.scripts[run[1]] ?? '')?.[1] ?? null
  return /^node (\S+\.js)$/.exec(command)?.[1] ?? null
}

const helpCache = new Map()
/** The flags a script's --help (server.js: --help-all) names. */
function acceptedFlags (file) {
  if (!helpCache.has(file)) {
    const flag = file === 'server.js' ? '--help-all' : '--help'
    let text
    try {
      text = execFileSync(process.execPath, [file, flag], { cwd: ROOT, encoding: 'utf8', timeout: 30000, stdio: ['ignore', 'pipe', 'pipe'] })
    } catch (err) {
      text = `${err.stdout ?? ''}${err.stderr ?? ''}`
    }
    helpCache.set(file, new Set([flag, ...text.match(/--[a-z][a-z0-9-]*/g) ?? []]))
  }
  return helpCache.get(file)
}

const COMMAND = /\b(npm run [\w:-]+|npm start|node (?:server|scripts\/[\w/-]+|generators\/[\w-]+)\.js)\b([^|;&#]*)/g

/** The commands quoted in a page's code, each with the flags written after it. */
export function quotedCommands (markdown) {
  const commands = []
  for (const { line, text } of codeSnippets(markdown)) {
    for (const m of text.matchAll(COMMAND)) {
      // a quoted argument is a value, and so are the flags handed to the servers by --server-flag and --variant
      const args = m[2].replace(/"[^"]*"|'[^']*'/g, '').replace(/--(server-flag|variant)(?:=|\s+)\S+/g, '--$1')
      const flags = [...args.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)].map(function name (f) { return f[0] })
      commands.push({ line, command: m[1], flags: flags.filter(function notSeparator (f) { return f !== '--' }) })
    }
  }
  return commands
}

describe('the links and commands of the docs', function () {
  this.timeout(120000)
  const pages = markdownFiles()

  it('every relative link reaches a tracked file, and its anchor a heading there', function () {
    const problems = []
    for (const page of pages) {
      for (const link of linksOf(readPage(page))) {
        const why = brokenLink(page, link.dest)
        if (why) problems.push(`${page}:${link.line}: ${why}`)
      }
    }
    assert.deepEqual(problems, [])
  })

  it('every npm run X quoted is a script of package.json', function () {
    const problems = []
    for (const page of pages) {
      readPage(page).split('\n').forEach(function read (line, k) {
        for (const m of line.matchAll(/\bnpm run ([\w:-]+)/g)) {
          if (!(m[1] in PACKAGE.scripts)) problems.push(`${page}:${k + 1}: npm run ${m[1]}`)
        }
      })
    }
    assert.deepEqual(problems, [])
  })

  it('every --flag quoted beside a command is one that command takes', function () {
    const problems = []
    for (const page of pages) {
      for (const { line, command, flags } of quotedCommands(readPage(page))) {
        const file = scriptFile(command)
        if (file === null) continue
        const accepted = acceptedFlags(file)
        for (const flag of flags) if (!accepted.has(flag)) problems.push(`${page}:${line}: ${command} ${flag} (${file} --help does not name it)`)
      }
    }
    assert.deepEqual(problems, [])
  })

  describe('how a link is judged', function () {
    const files = new Set(['README.md', 'docs/api.md', 'docs/lessons/ingest.md', 'lib/ingest/sequence.js'])
    const anchors = function anchorsOfFake (file) { return new Set(file === 'docs/api.md' ? ['routes'] : []) }

    it('follows relative paths and anchors', function () {
      assert.equal(brokenLink('docs/lessons/ingest.md', '../api.md#routes', { files, anchors }), null)
      assert.equal(brokenLink('README.md', 'lib/ingest/sequence.js', { files, anchors }), null)
      assert.equal(brokenLink('README.md', 'lib/ingest/', { files, anchors }), null)
      assert.equal(brokenLink('README.md', 'https://nodejs.org/api/stream.html', { files, anchors }), null)
    })

    it('refuses what a clone does not have', function () {
      assert.match(brokenLink('docs/api.md', '../../shared/REFERENCES.md', { files, anchors }), /outside the repository/)
      assert.match(brokenLink('docs/api.md', 'reports/2026/results.md', { files, anchors }), /not a file git tracks/)
      assert.match(brokenLink('docs/api.md', '#nowhere', { files, anchors }), /no heading #nowhere/)
      assert.match(brokenLink('docs/api.md', 'file:///etc/passwd', { files, anchors }), /only https/)
    })

    it('reads the flags written after a command, up to the next command', function () {
      const page = '```sh\nnpm run bench -- ingest --sizes 500MB --server-flag --unsafe-bad --repeat 3 | tee x --not-this\nnode server.js --port 3001 && npm start -- --host ::1\n```\nand `npm run grade -- h.js --quick`'
      assert.deepEqual(quotedCommands(page).map(function shown (c) { return `${c.command}: ${c.flags.join(' ')}` }), [
        'npm run bench: --sizes --server-flag --repeat',
        'node server.js: --port',
        'npm start: --host',
        'npm run grade: --quick'
      ])
    })
  })
})
