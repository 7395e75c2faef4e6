/**
 * What the package specs share (test/slow/package.test.js, test/slow/ci-workflows.test.js):
 * the lab packed with `npm pack`, installed from that tarball in an empty folder from npm's
 * cache (CI ran `npm ci` first, so the cache holds every dependency), commands run there as a
 * user's shell would run them, and the commands a CI file runs, read from its YAML.
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { PROJECT_ROOT } from '../lib/config/options.js'

/**
 * The environment a command in the install folder gets: this Node first on PATH (so that
 * `npx streamlab`, whose first line is `#!/usr/bin/env node`, runs on the Node under test),
 * npm told to use its cache, and nothing of the lab's own data folder.
 * @param {Record<string, string>} [extra]
 */
export function userEnv (extra = {}) {
  const env = { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`, npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false', ...extra }
  delete env.STREAMLAB_DATA_DIR
  return env
}

/**
 * Run a shell command line in `cwd`, as a CI step runs it (bash, stopping at the first error).
 * @param {string} line
 * @param {{ cwd: string, env?: NodeJS.ProcessEnv, timeoutMs?: number }} options
 * @returns {Promise<{ code: number, stdout: string, stderr: string, ms: number }>}
 */
export function runLine (line, { cwd, env = userEnv(), timeoutMs = 180_000 }) {
  const started = Date.now()
  return new Promise(function run (resolve) {
    execFile('bash', ['-e', '-c', line], { cwd, env, timeout: timeoutMs, maxBuffer: 32 * 2 ** 20 }, function done (err, stdout, stderr) {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr, ms: Date.now() - started })
    })
  })
}

/**
 * A temporary folder that other users may enter: graded as root, a handler runs as a user of
 * its own, which must reach the installed grader and its packages (docs/install.md).
 * @param {string} prefix
 */
export function openTempDir (prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  fs.chmodSync(dir, 0o755)
  return dir
}

/**
 * `npm pack` the lab into `dir`.
 * @param {string} dir
 * @returns {Promise<{ tarball: string, files: string[], size: number, unpackedSize: number }>}
 */
export async function packLab (dir) {
  const run = await runLine(`npm pack ${JSON.stringify(PROJECT_ROOT)} --json --pack-destination ${JSON.stringify(dir)}`, { cwd: dir })
  if (run.code !== 0) throw new Error(`npm pack failed: ${run.stderr}`)
  const [packed] = JSON.parse(run.stdout.slice(run.stdout.indexOf('[')))
  return {
    tarball: path.join(dir, packed.filename),
    files: packed.files.map(function name (f) { return f.path }),
    size: packed.size,
    unpackedSize: packed.unpackedSize
  }
}

/**
 * An empty project in `dir` with the tarball installed, as docs/install.md says.
 * @param {string} dir
 * @param {string} tarball
 * @returns {Promise<{ ms: number }>} how long the install took
 */
export async function installTarball (dir, tarball) {
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'streamlab-user', private: true }, null, 2) + '\n')
  const run = await runLine(`npm install --prefer-offline --no-audit --no-fund ${JSON.stringify(tarball)}`, { cwd: dir })
  if (run.code !== 0) throw new Error(`npm install of ${tarball} failed: ${run.stderr}`)
  return { ms: run.ms }
}

/**
 * The shell commands a CI file runs, in order: a GitHub Actions step's `run:` (one line, or a
 * `|` block), a GitLab job's `script:` items. A small line reader for the files in docs/ci/,
 * not YAML at large: a value is taken as written, quotes and all, as the runner's shell gets it.
 * @param {string} yaml
 * @returns {string[]}
 */
export function ciCommands (yaml) {
  const lines = yaml.split(/\r?\n/)
  const commands = []
  const indentOf = function indentOf (line) { return line.length - line.trimStart().length }
  for (let k = 0; k < lines.length; k++) {
    const run = /^(\s*)(?:- )?run:\s*(.*)$/.exec(lines[k])
    if (run) {
      if (run[2] !== '|') {
        commands.push(run[2].trim())
        continue
      }
      const block = []
      const indent = indentOf(lines[k])
      while (k + 1 < lines.length && (lines[k + 1].trim() === '' || indentOf(lines[k + 1]) > indent)) block.push(lines[++k].trim())
      commands.push(block.join('\n').trim())
      continue
    }
    const script = /^(\s*)script:\s*$/.exec(lines[k])
    if (script) {
      while (k + 1 < lines.length && /^\s*- /.test(lines[k + 1]) && indentOf(lines[k + 1]) >= script[1].length) commands.push(lines[++k].trim().slice(2).trim())
    }
  }
  return commands
}
