/** The grader's version, which every card and class row carries beside the submission's digest. */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PROJECT_ROOT } from '../../lib/config/options.js'

const GIT_TIMEOUT_MS = 5000

/** package.json's version with `+` and the 12-digit git commit in a checkout, as semver writes build metadata. */
export async function labVersion () {
  const pkg = JSON.parse(await fs.promises.readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8'))
  const commit = await gitCommit()
  return commit === null ? pkg.version : `${pkg.version}+${commit.slice(0, 12)}`
}

/** HEAD's commit, or null: only the lab's own checkout (installed, it sits in another project's node_modules). */
function gitCommit () {
  if (!fs.existsSync(path.join(PROJECT_ROOT, '.git'))) return Promise.resolve(null)
  return new Promise(function askGit (resolve) {
    execFile('git', ['rev-parse', 'HEAD'], { cwd: PROJECT_ROOT, timeout: GIT_TIMEOUT_MS }, function answered (err, stdout) {
      const commit = stdout?.trim()
      resolve(err || !/^[0-9a-f]{40}$/.test(commit ?? '') ? null : commit)
    })
  })
}
