#!/usr/bin/env node
/**
 * `streamlab`, the command an installed package gives (`npx streamlab grade …`):
 * one word for each of the lab's entry points, each taking the arguments its
 * npm script takes (`npx streamlab grade --url …` is `npm run grade -- --url …`).
 *
 * The entry point runs in this process, not a child: a `--start "npx streamlab
 * start"` service is then one process tree the grader measures, with no idle
 * node of ours in it. Installed in another project's node_modules, what the
 * lab writes goes under the folder it was started from (STREAMLAB_DATA_DIR,
 * lib/util/project-root.js), set here once so that every process it starts
 * writes to the same place.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { DATA_DIR_ENV, PROJECT_ROOT, defaultDataDir, isInstalled } from '../lib/util/project-root.js'

/** The commands, the file each runs, and what it does (the first line of `streamlab --help`). */
const COMMANDS = Object.freeze({
  start: { script: 'server.js', about: 'the lab and its dashboard on http://127.0.0.1:3000' },
  grade: { script: 'scripts/grade.js', about: 'grade a handler, a class, or any service at a URL (--junit, --baseline for CI)' },
  bench: { script: 'scripts/bench.js', about: 'run an experiment from the command line and write its report' },
  demo: { script: 'scripts/demo.js', about: 'the five-minute classroom demo' },
  runs: { script: 'scripts/runs.js', about: 'list, show and compare the records experiment runs left' }
})

const EXIT_USAGE = 2

function usage () {
  const width = Math.max(...Object.keys(COMMANDS).map(function length (name) { return name.length }))
  return [
    'Usage: streamlab <command> [arguments]    (npx streamlab … in a project that installed it)',
    '',
    ...Object.entries(COMMANDS).map(function line ([name, c]) { return `  ${name.padEnd(width)}  ${c.about}` }),
    '',
    'streamlab <command> --help: that command\'s flags. Where a help says "npm run grade --", type',
    '"streamlab grade": the arguments are the same.',
    isInstalled()
      ? `The lab writes to ${defaultDataDir()} (STREAMLAB_DATA_DIR to change it); a bench's report goes to reports/ here.`
      : 'The lab writes to test-data/ in the checkout; a bench\'s report goes to reports/, its --figures to docs/figures/.',
    'Docs: README.md in the package; every page in the repository\'s docs/ (docs/grading-in-ci.md for CI).'
  ].join('\n')
}

/**
 * Which entry point to run, and with what arguments.
 * @param {string[]} argv the arguments after `streamlab`
 * @returns {{ help: true } | { script: string, args: string[] } | { problem: string }}
 */
export function readCommand (argv) {
  const [name, ...args] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') return { help: true }
  if (!Object.hasOwn(COMMANDS, name)) return { problem: `no command "${name}": one of ${Object.keys(COMMANDS).join(', ')}` }
  return { script: path.join(PROJECT_ROOT, COMMANDS[name].script), args }
}

async function main () {
  const command = readCommand(process.argv.slice(2))
  if (command.help) {
    process.stdout.write(usage() + '\n')
    return
  }
  if (command.problem) {
    process.stderr.write(`streamlab: ${command.problem}\n\n${usage()}\n`)
    process.exitCode = EXIT_USAGE
    return
  }
  // named once, here: the lab, its worker and a bench's children inherit it (lib/util/project-root.js)
  if (isInstalled() && !process.env[DATA_DIR_ENV]) process.env[DATA_DIR_ENV] = defaultDataDir()
  // the entry point sees the command line its npm script would give it, and runs as a main module does
  process.argv = [process.argv[0], command.script, ...command.args]
  await import(pathToFileURL(command.script).href)
}

/** A path with its links resolved (npm's bin link leads here), or as given. */
function realPath (file) {
  try {
    return fs.realpathSync(file)
  } catch {
    return file
  }
}

// run as a command only: a spec may import readCommand
if (process.argv[1] && fileURLToPath(import.meta.url) === realPath(process.argv[1])) await main()
