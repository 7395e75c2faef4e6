/**
 * Every `npm run` script and every `streamlab` command answers `--help` with its usage, exits 0
 * and does nothing else: no lab started, no body generated, no report, figure or data file
 * written. A class types `--help` to learn what a command will do before it does it.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ROOT } from './markdown.js'

const PACKAGE = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))

/** Scripts that run another tool with its own help (mocha, eslint), not the lab's. */
const TOOLS = new Set(['test', 'test:all', 'lint'])

/** The streamlab commands, as bin/streamlab.js lists them. */
const COMMANDS = ['start', 'grade', 'bench', 'demo', 'runs']

/** Where a command could leave something behind: the data folder the spec gives it, and the project's own. */
const WATCHED = ['reports', 'docs/figures', 'test-data/bench', 'test-data/runs', 'test-data/profiles']

/** `node file args` of a package script, with --help after its own arguments, as `npm run x -- --help` passes it. */
function scriptCommand (name) {
  const words = PACKAGE.scripts[name].split(/\s+/)
  assert.equal(words[0], 'node', `${name}: "${PACKAGE.scripts[name]}" is not a node script`)
  return [...words.slice(1), '--help']
}

function listing (dir) {
  try {
    return fs.readdirSync(path.join(ROOT, dir)).sort().join('\n')
  } catch (err) {
    if (err.code === 'ENOENT') return null
    throw err
  }
}

/** Run `node args` in the project with a fresh data folder: its exit code, output, and what changed. */
async function runHelp (args) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-help-'))
  const before = WATCHED.map(listing)
  try {
    const { code, stdout, stderr } = await new Promise(function run (resolve) {
      execFile(process.execPath, args, { cwd: ROOT, env: { ...process.env, STREAMLAB_DATA_DIR: dataDir }, timeout: 60_000 }, function done (err, stdout, stderr) {
        resolve({ code: err ? (err.code ?? err.signal) : 0, stdout, stderr })
      })
    })
    const changed = WATCHED.filter(function differs (dir, k) { return listing(dir) !== before[k] })
    return { code, stdout, stderr, changed, leftInDataDir: fs.readdirSync(dataDir) }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

function assertOnlyHelp (label, { code, stdout, stderr, changed, leftInDataDir }) {
  assert.equal(code, 0, `${label} --help exits ${code}: ${stderr.slice(0, 400)}`)
  assert.match(stdout, /Usage/, `${label} --help prints no usage: ${stdout.slice(0, 400)}`)
  assert.deepEqual(changed, [], `${label} --help wrote into ${changed.join(', ')}`)
  assert.deepEqual(leftInDataDir, [], `${label} --help wrote into its data folder`)
}

describe('--help on every script and command', function () {
  this.timeout(300_000)

  const scripts = Object.keys(PACKAGE.scripts).filter(function ours (name) { return !TOOLS.has(name) })

  it('has a lab script behind every npm run name but the tools', function () {
    for (const name of scripts) assert.match(PACKAGE.scripts[name], /^node \S+\.js\b/, name)
  })

  for (const name of scripts) {
    it(`npm run ${name} -- --help prints its usage and does nothing else`, async function () {
      assertOnlyHelp(`npm run ${name}`, await runHelp(scriptCommand(name)))
    })
  }

  for (const command of COMMANDS) {
    it(`streamlab ${command} --help prints its usage and does nothing else`, async function () {
      assertOnlyHelp(`streamlab ${command}`, await runHelp(['bin/streamlab.js', command, '--help']))
    })
  }

  it('lists every command streamlab --help names', async function () {
    const { stdout } = await runHelp(['bin/streamlab.js', '--help'])
    const named = [...stdout.matchAll(/^ {2}(\w+) {2}/gm)].map(function name (m) { return m[1] })
    assert.deepEqual(named.sort(), [...COMMANDS].sort())
  })
})
