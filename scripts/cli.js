/** What every script's command line does the same way: usage errors, --help, exit codes, crashes. */
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { figuresCommand, writeFigures } from '../lib/measure/figures.js'
import { terminalText } from '../lib/util/escape.js'

export const EXIT_USAGE = 2

/** True when node was started with the module at `url` (import.meta.url): a module importing it starts nothing. */
export function isMain (url) {
  return process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(url)
}

/** A line of progress, to stderr: stdout holds the results. */
export function log (line) {
  process.stderr.write(`${line}\n`)
}

/** When a measurement started and the load average then, as a figures file's meta says them. */
export function measureStart () {
  return { started: new Date().toISOString(), loadBefore: os.loadavg()[0] }
}

/** --figures NAME: the figures file (lib/measure/figures.js) of command `name`, its files said; none without NAME. */
export async function keepFigures (name, figures, { title, meta, markdown, data }) {
  if (figures === undefined || figures === null) return []
  const files = await writeFigures(figures, { title, command: figuresCommand(name, process.argv.slice(2)), meta, markdown, data })
  log(`wrote ${files.join(', ')}`)
  return files
}

/** A timestamp fit for a folder's name. */
export function stamp (date = new Date()) {
  return date.toISOString().replace(/[:.]/g, '-')
}

/**
 * Run a script as the process: `readOptions(argv)` throwing prints `name: message` and the usage
 * (exit 2), returning null (--help) prints the usage (exit 0); else `run(options)` resolves to the
 * exit code. A crash prints `name:` and its stack, each line escaped, and exits `crashCode`.
 */
export async function runScript (name, { usage, readOptions, run, crashCode = 1, argv = process.argv.slice(2) }) {
  let options
  try {
    options = readOptions(argv)
  } catch (err) {
    process.stderr.write(`${name}: ${err.message}\n\n${usage}\n`)
    process.exitCode = EXIT_USAGE
    return
  }
  if (options === null) {
    process.stdout.write(`${usage}\n`)
    return
  }
  try {
    process.exitCode = await run(options)
  } catch (err) {
    process.stderr.write(`${name}: ${String(err?.stack ?? err).split('\n').map(terminalText).join('\n')}\n`)
    process.exitCode = crashCode
  }
}
