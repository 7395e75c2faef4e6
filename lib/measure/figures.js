// The figures the docs quote: `--figures FILE` writes docs/figures/FILE.json (data, command, machine) and
// FILE.md (its table); test/figures.test.js holds the docs to them (docs/figures/README.md).
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

/** The command a figures file records: `npm run NAME -- ARGS`, less where the reports went (--out), which is no part of the figures. */
export function figuresCommand (script, argv) {
  const kept = []
  for (let k = 0; k < argv.length; k++) {
    if (argv[k] === '--out') k++
    else if (!argv[k].startsWith('--out=')) kept.push(argv[k])
  }
  return `npm run ${script} -- ${kept.map(function quoted (a) { return /\s/.test(a) ? `"${a}"` : a }).join(' ')}`
}

/** A figures file's name (lower-case letters, digits, dashes), or undefined; a TypeError names a bad one. */
export function checkFiguresName (name) {
  if (name !== undefined && !/^[a-z0-9][a-z0-9-]*$/.test(name)) {
    throw new TypeError(`--figures takes a name of lower-case letters, digits and dashes, not "${name}"`)
  }
  return name
}

/** Write docs/figures/NAME.json and NAME.md; resolves to the files written. */
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
  const load = `load ${m.load.before} before and ${m.load.after} after`
  const onMachine = `${m.cpus} cores, ${m.memoryGiB} GiB, Node ${m.node.slice(1)}, ${m.platform}, ${load}`
  const heading = `# ${run.title}\n\n\`${run.command}\`, ${date}: ${onMachine}. Data: [${name}.json](${name}.json).`
  await fs.promises.writeFile(md, `${heading}\n\n${run.markdown}`)
  return [json, md]
}
