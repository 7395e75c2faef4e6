/**
 * The command-line flags the docs give are the flags the commands take: each "every flag" table
 * lists exactly what the command's `--help` lists (the grader's, the profiler's), and every
 * `npm run bench|grade|profile|runs -- ...` (or `streamlab ...`) command in the README and the
 * docs uses only flags its command, or for the bench its bench, takes. server.js's tables are
 * test/server-flags.test.js's.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { ROOT, markdownFiles } from './markdown.js'

function help (script, ...args) {
  return execFileSync(process.execPath, [path.join(ROOT, script), ...args, '--help'], { cwd: ROOT, encoding: 'utf8' })
}

/** The flags a usage text gives, a line each, indented two spaces; -h and --help left out. */
export function flagsOfHelp (text) {
  const flags = new Set()
  for (const m of text.matchAll(/^ {2}(?:-[a-z], )?(--[a-z][a-z0-9-]*)/gm)) flags.add(m[1])
  flags.delete('--help')
  return flags
}

/** The bench's usage, by bench: the flags of "Options (all)" and of the bench's own section. */
export function benchFlags (text) {
  const sections = new Map()
  let current = null
  for (const line of text.split('\n')) {
    const heading = /^Options \(([a-z-]+)[,)]/.exec(line)
    if (heading) {
      current = heading[1]
      sections.set(current, [])
    } else if (current !== null) {
      sections.get(current).push(line)
    }
  }
  const all = flagsOfHelp((sections.get('all') ?? []).join('\n'))
  const byBench = new Map()
  for (const [name, lines] of sections) {
    if (name !== 'all') byBench.set(name, new Set([...all, ...flagsOfHelp(lines.join('\n'))]))
  }
  return byBench
}

/** The flags a markdown table's rows name, in any column, under `heading` up to the next heading. */
function tableFlags (file, heading) {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8')
  const at = text.indexOf(heading)
  assert.notEqual(at, -1, `${file} has "${heading}"`)
  const flags = new Set()
  for (const line of text.slice(at + heading.length).split('\n')) {
    if (/^#{1,3} /.test(line)) break
    if (!line.startsWith('| ')) continue
    for (const m of line.matchAll(/`(--[a-z][a-z0-9-]*)/g)) flags.add(m[1])
  }
  return flags
}

/**
 * Every command of a CLI the docs give, in code: its file:line, its first word after `--` (a bench,
 * a mode, a subcommand) and the flags it passes.
 * @param {RegExp} pattern matches the command's start, e.g. /npm run bench -- |streamlab bench /
 */
export function commandsIn (text, pattern) {
  const found = []
  const lines = text.split('\n')
  for (const [k, line] of lines.entries()) {
    for (const m of line.matchAll(new RegExp(`(?:${pattern.source})([^\`|\\n]*)`, 'g'))) {
      // a shell comment after the command is not the command's
      const words = m[1].replace(/\s#.*$/, '').trim().split(/\s+/).filter(Boolean)
      const flags = words.filter(function isFlag (w) { return /^--[a-z]/.test(w) }).map(function name (w) { return w.replace(/=.*$/, '') })
      found.push({ line: k + 1, first: words[0] ?? '', flags, text: m[0] })
    }
  }
  return found
}

const PAGES = markdownFiles({ generated: false })

function everyCommand (pattern) {
  const all = []
  for (const page of PAGES) {
    for (const c of commandsIn(fs.readFileSync(path.join(ROOT, page), 'utf8'), pattern)) all.push({ ...c, page })
  }
  return all
}

describe('the docs\' flags are the commands\' flags', function () {
  this.timeout(60000)

  const grade = flagsOfHelp(help('scripts/grade.js'))
  const profile = flagsOfHelp(help('scripts/profile.js'))
  const runs = flagsOfHelp(help('scripts/runs.js'))
  const bench = benchFlags(help('scripts/bench.js'))

  it('reads a usage text as the CLIs print it, and a command as the docs give it', function () {
    assert.deepEqual([...flagsOfHelp('Options:\n  --size SIZE   the size\n  -h, --help\n    --not-a-flag line\n  text --nor-this')], ['--size'])
    const b = benchFlags('Options (all):\n  --out DIR  x\n\nOptions (ingest):\n  --sizes LIST  x\n\nOptions (zip-bomb, from the experiment\'s parameters):\n  --variant V  x\n')
    assert.deepEqual([...b.get('ingest')], ['--out', '--sizes'])
    assert.deepEqual([...b.get('zip-bomb')], ['--out', '--variant'])
    const [c] = commandsIn('run `npm run bench -- ingest --sizes 1MB --server-flag=--parse-threads=1` now', /npm run bench -- /)
    assert.deepEqual({ first: c.first, flags: c.flags }, { first: 'ingest', flags: ['--sizes', '--server-flag'] })
  })

  it('docs/grading-a-service.md\'s "Every flag" table lists exactly what npm run grade -- --help lists', function () {
    assert.deepEqual([...tableFlags('docs/grading-a-service.md', '## Every flag')].sort(), [...grade].sort())
  })

  it('docs/profiling.md\'s option table lists exactly what npm run profile -- --help lists', function () {
    assert.deepEqual([...tableFlags('docs/profiling.md', 'Routes: ')].sort(), [...profile].sort())
  })

  it('every npm run bench command in the docs names a bench and only flags that bench takes', function () {
    const wrong = []
    const commands = everyCommand(/npm run bench -- |streamlab bench /)
    assert.ok(commands.length >= 30, `${commands.length} bench commands found in the docs`)
    for (const c of commands) {
      if (c.first === '--help' || c.first === 'NAME' || c.first === '<name>') continue
      const takes = bench.get(c.first)
      if (!takes) { wrong.push(`${c.page}:${c.line}: no bench "${c.first}": ${c.text}`); continue }
      for (const flag of c.flags) if (!takes.has(flag)) wrong.push(`${c.page}:${c.line}: ${c.first} takes no ${flag}`)
    }
    assert.deepEqual(wrong, [])
  })

  for (const [cli, flags, pattern] of [['grade', grade, /npm run grade -- |streamlab grade /], ['profile', profile, /npm run profile -- /], ['runs', runs, /npm run runs -- |streamlab runs /]]) {
    it(`every npm run ${cli} command in the docs passes only flags npm run ${cli} -- --help lists`, function () {
      const wrong = []
      const commands = everyCommand(pattern)
      assert.ok(commands.length >= 3, `${commands.length} npm run ${cli} commands found in the docs`)
      for (const c of commands) {
        for (const flag of c.flags) if (flag !== '--help' && !flags.has(flag)) wrong.push(`${c.page}:${c.line}: npm run ${cli} takes no ${flag}`)
      }
      assert.deepEqual(wrong, [])
    })
  }
})
