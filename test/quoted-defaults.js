/**
 * How test/docs-defaults.test.js reads the defaults the docs quote, to hold them to the code's (as
 * fastify's test/internals/errors.test.js holds docs/Reference/Errors.md to lib/errors/index.js).
 * Nothing here lists a sentence: the code gives a table
 * of every option leaf (`limits.record`, `ingest.bufferBudget`, `server.maxConnections`, the
 * supervisor's `restartBackoffMs`) with its default, lib/config/flags.js names each flag's option
 * (`--buffer-budget`: `ingest.bufferBudget`), and every experiment's schema gives its params' defaults.
 * The scanner then reads README.md, docs/ and exercises/ (fenced code left out: commands and their
 * output) and what `node server.js --help-all` prints for a default quoted beside a name:
 *
 * - in prose and table cells, a name in backticks with a figure right after it (`` `limits.record`
 *   (4 MiB) ``, `` `ingest.bufferBudget`, 16 MiB ``, `` `--disk-quota`, default 2 GiB ``) or right
 *   before it in parentheses (`` 16 MiB (`ingest.bufferBudget`) ``);
 * - in a table with a "default" (or "bound") column, that cell of a row naming the option or flag;
 *   a row naming several options gives as many figures, in the same order (`200, from 16 MiB`);
 * - in a table headed `| param |`, the default cell against the schema of the experiment that has
 *   all the table's params (the one named last above the table when several have);
 * - in --help-all, each flag's `(default X)` or `(env NAME, default X)`.
 *
 * Figures are read as the lab reads them: sizes with lib/util/units.js parseByteSize (`4KiB`, `500 MB`
 * is 500,000,000 bytes, not 500 MiB), durations in ms (`10 s`, `250ms`, `60m`), counts with their
 * thousands separators. Defaults that depend on the machine (the memory budget, the parse threads)
 * must never be quoted as one figure, and no sentence may give the default memory budget a fixed
 * size: it is a quarter of the machine's memory, at least 1 GiB (lib/limits/memory-budget.js).
 * Each mismatch is reported with its file and line.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { DEFAULTS } from '../lib/config/options.js'
import { FLAGS as FLAG_TABLE } from '../lib/config/flags.js'
import { SUPERVISOR_DEFAULTS } from '../lib/supervisor/options.js'
import { HUB_DEFAULTS } from '../lib/metrics/hub-options.js'
import { DATABASE_DEFAULTS } from '../lib/db/options.js'
import { SERVER_DEFAULTS } from '../lib/http/server.js'
import { UPLOAD_DEFAULTS } from '../experiments/upload/server.js'
import { EXPERIMENTS } from '../experiments/index.js'
import { formatBytes, parseByteSize } from '../lib/util/units.js'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Options whose default is worked out from the machine, with what the docs should say instead. */
const RELATIVE = Object.freeze({
  memoryBudget: 'a quarter of the machine\'s memory, at least 1 GiB (lib/limits/memory-budget.js)',
  memoryLimit: 'a quarter of the machine\'s memory, at least 1 GiB (lib/limits/memory-budget.js)',
  parseThreads: 'the cores, at most 4 (lib/config/options.js)'
})

/** A group member by its own name -> its full name (`maxConnections` -> `server.maxConnections`). */
const ALIASES = new Map()

/**
 * Every option the code gives a number or a word by default, by the name the docs use: the app's
 * options dotted from the top (`limits.record`), the groups the app hands on under their member
 * (`server.`, `metrics.`, `upload.`, `database.`), the supervisor's by their own name.
 * @returns {Map<string, { value: number|string|null, relative: string|null, source: string }>}
 */
function codeDefaults () {
  const table = new Map()
  function add (prefix, object, source) {
    for (const [key, value] of Object.entries(object)) {
      const name = prefix + key
      if (Object.hasOwn(RELATIVE, name)) table.set(name, { value: null, relative: RELATIVE[name], source })
      else if (typeof value === 'number' || typeof value === 'string') table.set(name, { value, relative: null, source })
      else if (value !== null && typeof value === 'object' && !Array.isArray(value)) add(`${name}.`, value, source)
    }
  }
  add('', { ...DEFAULTS, dataDir: null }, 'lib/config/options.js DEFAULTS')
  add('server.', SERVER_DEFAULTS, 'lib/http/server.js SERVER_DEFAULTS')
  add('metrics.', HUB_DEFAULTS, 'lib/metrics/hub-options.js HUB_DEFAULTS')
  add('upload.', UPLOAD_DEFAULTS, 'experiments/upload/server.js UPLOAD_DEFAULTS')
  add('database.', DATABASE_DEFAULTS, 'lib/db/options.js DATABASE_DEFAULTS')
  add('', { ...SUPERVISOR_DEFAULTS, workerScript: null }, 'lib/supervisor/options.js SUPERVISOR_DEFAULTS')
  // a member of a group is also known by its own name when no other option has it (`maxConnections`)
  const leaves = new Map()
  for (const name of table.keys()) {
    const leaf = name.slice(name.lastIndexOf('.') + 1)
    if (leaf !== name && /[A-Z]/.test(leaf)) leaves.set(leaf, leaves.has(leaf) ? null : name)
  }
  for (const [leaf, name] of leaves) if (name !== null && !table.has(leaf)) ALIASES.set(leaf, name)
  return table
}

/**
 * Each flag and the option it sets, from lib/config/flags.js: an app option by its name under the
 * app (`app.limits.record` is `limits.record`), a supervisor option by its own (`restartBackoffMs`).
 * @returns {Map<string, string>} `--flag` -> option name
 */
function flagOptions () {
  const flags = new Map()
  for (const row of FLAG_TABLE) if (row.option !== null) flags.set(`--${row.name}`, row.option.replace(/^app\./, ''))
  return flags
}

export const OPTIONS = codeDefaults()
export const FLAGS = flagOptions()

/** A figure as the docs write one: a count (1,000,000), a size (16 MiB, 4KiB/s), a time (10 s, 250ms, 60m). */
const FIGURE = String.raw`(\d{1,3}(?:[,_]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:[ \t]?(KiB|MiB|GiB|KB|MB|GB|kB|bytes|B|ms|seconds?|s|minutes?|min|m|hours?|h|M))?(?:\/s)?(?![\w.])`
const FIGURE_AT_START = new RegExp(`^${FIGURE}`)
const FIGURES = new RegExp(`(?<![\\w.])${FIGURE}`, 'g')
const MS = { ms: 1, s: 1000, second: 1000, seconds: 1000, m: 60_000, min: 60_000, minute: 60_000, minutes: 60_000, h: 3_600_000, hour: 3_600_000, hours: 3_600_000 }

/**
 * A figure's value in the code's units: bytes for a size, ms for a time, the number for a count.
 * @returns {number}
 */
function figureValue (number, unit) {
  const n = number.replace(/[,_]/g, '')
  if (unit === undefined) return Number(n)
  if (unit === 'bytes') return Number(n)
  if (unit === 'M') return Number(n) * 1e6
  if (Object.hasOwn(MS, unit)) return Math.round(Number(n) * MS[unit])
  return parseByteSize(`${n}${unit === 'kB' ? 'KB' : unit}`)
}

/** How a default is said in a report: "4194304 (4.0 MiB)", "10000", "busy". */
function codeSays (entry) {
  if (entry.relative) return entry.relative
  if (typeof entry.value === 'string') return JSON.stringify(entry.value)
  return entry.value >= 1024 && entry.value % 1024 === 0 ? `${entry.value} (${formatBytes(entry.value)})` : String(entry.value)
}

/** The option a code span names: an option (`limits.record`) or a server flag (`--buffer-budget SZ`). */
function optionNamed (span) {
  const text = span.trim()
  if (OPTIONS.has(text)) return text
  if (ALIASES.has(text)) return ALIASES.get(text)
  const flag = /^(--[a-z][a-z-]*)(?:[ =][A-Z]+)?$/.exec(text)
  const option = flag ? FLAGS.get(flag[1]) : undefined
  return option !== undefined && OPTIONS.has(option) ? option : null
}

/**
 * One quoted default, checked: a report line when it is not the code's.
 * @returns {{ file: string, line: number, option: string, quoted: string, problem: string|null }}
 */
function check (where, option, quoted) {
  const entry = OPTIONS.get(option)
  const found = { file: where.file, line: where.line, option, quoted, problem: null }
  if (entry.relative) {
    found.problem = `${where.file}:${where.line}: ${option} quoted as ${quoted}; its default depends on the machine: ${entry.relative}`
    return found
  }
  if (typeof entry.value === 'string') {
    if (quoted !== entry.value) found.problem = `${where.file}:${where.line}: ${option} quoted as ${quoted}; the code's default is ${codeSays(entry)} (${entry.source})`
    return found
  }
  const m = FIGURE_AT_START.exec(quoted)
  const value = m ? figureValue(m[1], m[2]) : NaN
  if (value !== entry.value) found.problem = `${where.file}:${where.line}: ${option} quoted as ${quoted}; the code's default is ${codeSays(entry)} (${entry.source})`
  return found
}

/** A string's line numbers, for an offset into its paragraph. */
function lineAt (starts, offset) {
  let k = 0
  while (k + 1 < starts.length && starts[k + 1].offset <= offset) k++
  return starts[k].line
}

// a figure after a name ends its clause: `diskQuota` (4 KiB blocks ...) is no default
const CLOSED = String.raw`(?=[ \t]*(?:[),;]|$))`
const AFTER_TIGHT = new RegExp(String.raw`^[ \t]*[(,=]?[ \t]*(?:\(?` + '`--[a-z-]+`' + String.raw`\)?[ \t]*[,]?[ \t]*)?${FIGURE}${CLOSED}`)
const AFTER_DEFAULT = new RegExp(String.raw`^[^.;|` + '`' + String.raw`\n]{0,40}?\bdefault(?:s to| is| of)?:?[ \t]+${FIGURE}${CLOSED}`)
const BEFORE = new RegExp(String.raw`(?<![\w.])${FIGURE}[ \t]*\([ \t]*$`)

/**
 * Defaults quoted beside a name in running text: after it (`` `limits.record` (4 MiB) ``) or
 * before it in parentheses (`` 16 MiB (`ingest.bufferBudget`) ``). A figure inside the name's own
 * code span is a value given (`--memory-limit 512MiB`), not a default.
 * @param {string} text a paragraph or a table cell
 * @param {Array<{ offset: number, line: number }>} starts where each of its lines starts
 */
function quotesInText (file, text, starts) {
  const found = []
  for (const span of text.matchAll(/`([^`\n]+)`/g)) {
    const option = optionNamed(span[1])
    if (option === null) continue
    const where = { file, line: lineAt(starts, span.index) }
    const after = text.slice(span.index + span[0].length)
    const before = text.slice(0, span.index)
    const m = AFTER_TIGHT.exec(after) ?? AFTER_DEFAULT.exec(after) ?? BEFORE.exec(before)
    if (m === null) continue
    // an HTTP status after a name is the answer, not a default: `limits.compressed` 413 [`entity.too.large`]
    if (m[2] === undefined && /^[45]\d\d$/.test(m[1])) continue
    found.push(check(where, option, `${m[1]}${m[2] ? ` ${m[2]}` : ''}`))
  }
  return found
}

function cellsOf (row) {
  return row.replace(/^\|/, '').replace(/\|\s*$/, '').split(/(?<!\\)\|/).map(function trim (c) { return c.trim() })
}

/** The experiment a `| param |` table documents: the one with all its params, named last above it when several are. */
function experimentOf (params, textAbove) {
  const candidates = Object.values(EXPERIMENTS).filter(function hasAll (e) {
    return params.every(function known (p) { return e.params.some(function same (q) { return q.name === p }) })
  })
  if (candidates.length <= 1) return candidates[0] ?? null
  let best = null
  let at = -1
  for (const e of candidates) {
    const k = Math.max(textAbove.lastIndexOf(`\`${e.name}\``), textAbove.lastIndexOf(`"${e.name}"`), textAbove.lastIndexOf(`${e.name}.md`))
    if (k > at) { at = k; best = e }
  }
  return best
}

/** An experiment param's default against its table cell. */
function checkParam (where, experiment, spec, cell) {
  const text = cell.replace(/`/g, '').trim()
  const found = { file: where.file, line: where.line, option: `${experiment.name} ${spec.name}`, quoted: text, problem: null }
  if (spec.default === null || spec.default === undefined) {
    if (FIGURE_AT_START.test(text)) found.problem = `${where.file}:${where.line}: ${experiment.name}'s ${spec.name} quoted with default ${text}; its schema default is null (the experiment decides)`
    return found
  }
  let same
  if (typeof spec.default === 'number') {
    const m = FIGURE_AT_START.exec(text)
    same = m !== null && figureValue(m[1], m[2]) === spec.default
  } else if (spec.type === 'size') {
    const m = /^\S+/.exec(text)
    try { same = m !== null && parseByteSize(m[0]) === parseByteSize(spec.default) } catch { same = false }
  } else {
    same = text.split(/[\s;(]/)[0] === String(spec.default)
  }
  if (!same) found.problem = `${where.file}:${where.line}: ${experiment.name}'s ${spec.name} quoted with default ${text}; its schema default is ${JSON.stringify(spec.default)} (experiments/${experiment.name}/index.js)`
  return found
}

/** The options a text names in code spans, each once, in order. */
function optionsIn (text) {
  const named = []
  for (const span of text.matchAll(/`([^`\n]+)`/g)) {
    const option = optionNamed(span[1])
    if (option !== null && !named.includes(option)) named.push(option)
  }
  return named
}

/**
 * A table's rows: the default (or bound) column against the options each row names, the
 * `| param |` tables against their experiment's schema, and every other cell as running text.
 */
function quotesInTable (file, rows, textAbove) {
  const found = []
  const header = cellsOf(rows[0].text).map(function lower (c) { return c.toLowerCase() })
  const column = header.findIndex(function isDefault (c) { return /\bdefault\b|^bound$/.test(c) })
  const body = rows.slice(2)
  if (header[0] === 'param' && column !== -1) {
    const params = body.map(function first (r) { return cellsOf(r.text)[0].replace(/`/g, '') })
    const experiment = experimentOf(params, textAbove)
    if (experiment !== null) {
      for (const row of body) {
        const cells = cellsOf(row.text)
        const spec = experiment.params.find(function named (p) { return p.name === cells[0].replace(/`/g, '') })
        found.push(checkParam({ file, line: row.line }, experiment, spec, cells[column] ?? ''))
      }
    }
    return found
  }
  for (const row of body) {
    const cells = cellsOf(row.text)
    cells.forEach(function scanCell (cell, k) {
      if (k !== column) found.push(...quotesInText(file, cell, [{ offset: 0, line: row.line }]))
    })
    if (column === -1 || cells[column] === undefined) continue
    // a row about something else (`| \`limit\` | 0 to 10,000,000 (\`database.maxRows\`) | 1000 |`): its default is that thing's
    const subject = /^`([^`]+)`$/.exec(cells[0])
    if (subject !== null && optionNamed(subject[1]) === null) continue
    // the options a row is about: named in its first cell or its default cell (`| \`--max-restart-backoff T\` | 10s |
    // ... at least \`--restart-backoff\` |` is about one), else anywhere in it (`| share | bound | option (flag) |`)
    const named = optionsIn(`${cells[0]} ${cells[column]}`)
    if (named.length === 0) named.push(...optionsIn(row.text))
    if (named.length === 0) continue
    const cell = cells[column].replace(/`[^`]*`/g, function keepFigures (s) { return optionNamed(s.slice(1, -1)) === null ? s.slice(1, -1) : '' }).trim()
    const where = { file, line: row.line }
    const single = named.length === 1 ? OPTIONS.get(named[0]) : null
    if (single !== null && typeof single.value === 'string') {
      found.push(check(where, named[0], cell.split(/[\s,;(]/)[0]))
      continue
    }
    if (!FIGURE_AT_START.test(cell)) continue
    const figures = [...cell.matchAll(FIGURES)].map(function asText (m) { return `${m[1]}${m[2] ? ` ${m[2]}` : ''}` })
    if (named.length === 1) found.push(check(where, named[0], figures[0]))
    else if (figures.length === named.length) named.forEach(function pair (option, k) { found.push(check(where, option, figures[k])) })
  }
  return found
}

/**
 * Every default a markdown text quotes beside a name.
 * @param {string} file the path reported
 * @param {string} markdown
 * @returns {Array<{ file: string, line: number, option: string, quoted: string, problem: string|null }>}
 */
export function scanMarkdown (file, markdown) {
  const lines = markdown.split('\n')
  const found = []
  let fenced = false
  let paragraph = null
  let table = null
  function flush () {
    if (paragraph !== null) found.push(...quotesInText(file, paragraph.text, paragraph.starts))
    if (table !== null && table.length > 2) found.push(...quotesInTable(file, table, lines.slice(0, table[0].line - 1).join('\n')))
    paragraph = null
    table = null
  }
  lines.forEach(function scanLine (text, k) {
    if (/^\s*(```|~~~)/.test(text)) {
      flush()
      fenced = !fenced
      return
    }
    if (fenced) return
    if (/^\s*\|/.test(text)) {
      if (paragraph !== null) flush()
      table ??= []
      table.push({ text, line: k + 1 })
      return
    }
    if (table !== null) flush()
    if (text.trim() === '' || /^#/.test(text)) {
      flush()
      return
    }
    paragraph ??= { text: '', starts: [] }
    paragraph.starts.push({ offset: paragraph.text.length, line: k + 1 })
    paragraph.text += `${text} `
  })
  flush()
  return found
}

/**
 * A usage text (what `node server.js --help-all` prints): each flag's `(default X)` against its
 * option. A flag's meaning is wrapped over several lines; it is read as one.
 * @param {string} text
 * @returns {Array<{ file: string, line: number, option: string, quoted: string, problem: string|null }>}
 */
export function scanUsage (text) {
  const flags = []
  text.split('\n').forEach(function scanLine (line, k) {
    const m = /^\s+(?:-[a-z], )?(--[a-z][a-z-]*)/.exec(line)
    if (m) flags.push({ name: m[1], line: k + 1, text: line })
    else if (/^\s{10,}/.test(line) && flags.length > 0) flags.at(-1).text += ` ${line.trim()}`
  })
  const found = []
  for (const flag of flags) {
    const quoted = /\bdefault:? ([^);]+)/.exec(flag.text)
    if (quoted === null) continue
    const option = FLAGS.get(flag.name)
    const where = { file: 'server.js --help-all', line: flag.line }
    if (option === undefined || !OPTIONS.has(option)) {
      // a default in words for a flag with no figure behind it: --database-url's embedded PGlite
      if (!FIGURE_AT_START.test(quoted[1])) continue
      found.push({ ...where, option: flag.name, quoted: quoted[1], problem: `--help-all line ${flag.line}: ${flag.name} is given a default, but lib/config/flags.js names no option with one` })
      continue
    }
    const entry = OPTIONS.get(option)
    // a relative default is said in words ("a quarter of this machine's memory", "the cores, at most 4")
    if (entry.relative && !FIGURE_AT_START.test(quoted[1])) continue
    const figure = FIGURE_AT_START.exec(quoted[1].replace(/^(\d+(?:\.\d+)?)(KiB|MiB|GiB|KB|MB|GB|B|ms|s|m)\b/, '$1 $2'))
    found.push(check(where, option, typeof entry.value === 'string' ? quoted[1].trim() : figure ? `${figure[1]}${figure[2] ? ` ${figure[2]}` : ''}` : quoted[1]))
  }
  return found
}

/** README.md, docs/ and exercises/: every markdown file, as a path from the root. */
export function docFiles () {
  const files = ['README.md']
  for (const dir of ['docs', 'exercises']) {
    for (const f of fs.readdirSync(path.join(ROOT, dir), { recursive: true })) {
      if (f.endsWith('.md')) files.push(path.posix.join(dir, f.split(path.sep).join('/')))
    }
  }
  return files.sort()
}

export function scanDocs () {
  return docFiles().flatMap(function scanFile (file) { return scanMarkdown(file, fs.readFileSync(path.join(ROOT, file), 'utf8')) })
}

const SIZE = String.raw`\d+(?:\.\d+)?[ \t]?(?:KiB|MiB|GiB|KB|MB|GB)\b`
const FIXED_BUDGET = new RegExp(String.raw`\b(?:memory\s+|default\s+)?budget\s+(?:is|of|was)\s+(?:only\s+)?${SIZE}|\b${SIZE}\s+(?:memory\s+)?budget\b`, 'i')

/**
 * Sentences that give the default memory budget one fixed size ("the default budget is 1 GiB", "Start
 * the lab with `npm start`. Its memory budget is 1 GiB"): the sentence or the one before it speaks
 * of the default, and neither says what the default is relative to.
 * @returns {string[]} file:line: the sentence
 */
export function fixedBudgetSentences (file, markdown) {
  const problems = []
  const sentences = []
  const lines = markdown.split('\n')
  let fenced = false
  const prose = lines.map(function unfenced (text) {
    if (/^\s*(```|~~~)/.test(text)) { fenced = !fenced; return '' }
    return fenced ? '' : text
  })
  const text = prose.join('\n')
  // a sentence ends at . ! or ? before a space, or at a blank line
  for (const m of text.matchAll(/(?:[^.!?\n]|\n(?!\s*\n)|[.!?](?!\s|$))+(?:[.!?]|$)/g)) sentences.push(m)
  sentences.forEach(function judge (m, k) {
    // inline code is a command or its output (`... memory budget 4 GiB)`), not a statement
    const fixed = FIXED_BUDGET.exec(m[0].replace(/`[^`]*`/g, function blank (s) { return ' '.repeat(s.length) }))
    if (fixed === null) return
    const context = `${k > 0 ? sentences[k - 1][0] : ''} ${m[0]}`
    if (!/\bdefault\b|npm start|node server\.js/.test(context)) return
    if (/quarter|machine|cgroup|at least|memory-limit/i.test(context)) return
    const line = text.slice(0, m.index + fixed.index).split('\n').length
    problems.push(`${file}:${line}: the default memory budget given as a fixed size; it is a quarter of the machine's memory, at least 1 GiB: ${m[0].trim().replace(/\s+/g, ' ')}`)
  })
  return problems
}
