/**
 * The figures the docs quote: `npm run bench -- NAME ... --figures FILE`
 * writes docs/figures/FILE.json (the run's data, its command and its
 * machine) and docs/figures/FILE.md (its table). test/figures.test.js holds
 * every figure the docs quote to these files (docs/figures/README.md).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { PROJECT_ROOT } from '../config/options.js'
import { round } from '../util/units.js'

const FIGURES_DIR = path.join(PROJECT_ROOT, 'docs', 'figures')

/** The machine a run was measured on, as a figures file records it. */
function machine ({ loadBefore } = {}) {
  return {
    cpus: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    load: { before: round(loadBefore ?? os.loadavg()[0], 100), after: round(os.loadavg()[0], 100) }
  }
}

/**
 * The command a figures file records: `npm run NAME -- ARGS`, less where the reports went (--out),
 * which is no part of the figures.
 */
export function figuresCommand (script, argv) {
  const kept = []
  for (let k = 0; k < argv.length; k++) {
    if (argv[k] === '--out') k++
    else if (!argv[k].startsWith('--out=')) kept.push(argv[k])
  }
  return `npm run ${script} -- ${kept.map(function quoted (a) { return /\s/.test(a) ? `"${a}"` : a }).join(' ')}`
}

/**
 * Check a figures file's name (`--figures NAME`): lower-case letters, digits and dashes.
 * @param {string|undefined} name
 * @returns {string|undefined} the name, or undefined when none was given
 * @throws {TypeError} naming the flag and the name
 */
export function checkFiguresName (name) {
  if (name !== undefined && !/^[a-z0-9][a-z0-9-]*$/.test(name)) {
    throw new TypeError(`--figures takes a name of lower-case letters, digits and dashes, not "${name}"`)
  }
  return name
}

/**
 * Write docs/figures/NAME.json and NAME.md.
 * @param {string} name lower-case letters, digits and dashes
 * @param {{ title: string, command: string, meta: object, markdown: string, data: object }} run
 * @returns {Promise<string[]>} the files written
 */
export async function writeFigures (name, run, dir = FIGURES_DIR) {
  await fs.promises.mkdir(dir, { recursive: true })
  const { loadBefore, started, ...rest } = run.meta
  // the machine block says these once
  for (const key of ['node', 'cpus', 'memoryGiB']) delete rest[key]
  const date = started.slice(0, 10)
  const record = { title: run.title, command: run.command, date, machine: machine({ loadBefore }), ...rest, ...run.data }
  const json = path.join(dir, `${name}.json`)
  const md = path.join(dir, `${name}.md`)
  await fs.promises.writeFile(json, JSON.stringify(record, null, 2) + '\n')
  const m = record.machine
  await fs.promises.writeFile(md, `# ${run.title}\n\n\`${run.command}\`, ${date}: ${m.cpus} cores, ${m.memoryGiB} GiB, Node ${m.node.slice(1)}, ${m.platform}, load ${m.load.before} before and ${m.load.after} after. Data: [${name}.json](${name}.json).\n\n${run.markdown}`)
  return [json, md]
}
