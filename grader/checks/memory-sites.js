/**
 * Which of the graded code's own lines allocated the bytes a failed memory check measured: one more run, on a fresh process with
 * the lab's allocation sampler in it (grader/student/ sites-writer.js), of the check's largest load; the lines in the
 * submission's files (a service's own files) that allocated most, each with its share of what all the code's lines allocated in
 * that run (allocated against allocated, as docs/metrics.md defines a share; the growth read from outside stands beside them, a
 * figure of its own); and the hint that follows from the top line's code. Taken once a grading, by the first memory check that
 * fails. The sampler runs in the graded process, which could forge or hide its sites: a line named is a pointer, and the verdict
 * never stands on it.
 */
import path from 'node:path'
import { lineKey } from '../../lib/allocation/site.js'
import { timeoutFor } from './settings.js'
import { MiB, round } from '../../lib/util/units.js'

/** Lines a card names. */
const TOP_LINES = 3
const MOST_CODE_CHARS = 120

export const SITES_TRUST = 'sampled inside the graded process by the lab (Buffers, and the strings made of them): a pointer to a line, ' +
  'which code in that process could hide or forge; the verdict stands on the RSS read from outside'

/** What a line does, read from its code: the first pattern it matches. */
const LINE_KINDS = Object.freeze([
  Object.freeze({ pattern: /\.(text|json|arrayBuffer|blob|formData)\s*\(\s*\)/,
    does: 'reads the whole body into one value (.text(), .json(), .arrayBuffer()): every byte waits in memory until the last one comes' }),
  Object.freeze({ pattern: /JSON\.parse\s*\(/,
    does: 'parses the whole body at once: its text and every record it makes are in memory together' }),
  Object.freeze({ pattern: /Buffer\.concat\s*\(/,
    does: 'joins every chunk into one Buffer as large as the body, while the chunks are still held' }),
  Object.freeze({ pattern: /\+=/, does: 'appends each chunk to one string, which grows to the whole body' }),
  Object.freeze({ pattern: /\.push\s*\(/, does: 'keeps every chunk in an array, which holds the whole body' }),
  Object.freeze({ pattern: /getRawBody|rawBody|raw-body|bodyParser|express\.(json|raw|text)/,
    does: 'hands the body to a library that reads it whole' }),
  Object.freeze({ pattern: /(gunzip|inflate|unzip|brotliDecompress)(Sync)?\s*\(/,
    does: 'inflates the whole body in one call, into one Buffer as large as the document' }),
  Object.freeze({ pattern: /toString\s*\(/, does: 'turns a whole Buffer into one string' })
])
const STREAM_INSTEAD = 'Stream instead: pipeline(body, zlib.createGunzip(), a record scanner) (exercise 01, step 4), and keep only the ' +
  'record being read and the running totals.'

/**
 * The allocation sites of the graded target's load `files` (after one upload of `warm`), taken once a grading; the first call
 * runs it, later calls get the same: `{ sampled, growthMiB, allocatedMiB, note, lines }`, each line `{ file, line, functionName,
 * kinds, allocatedMiB, heldMiB, share, code, does }`.
 */
export async function locateSites (ctx, load) {
  ctx.memorySites.taken ??= takeSites(ctx, load)
  return ctx.memorySites.taken
}

async function takeSites (ctx, { warm, files, timeoutMs }) {
  const lab = await ctx.sampledLab()
  if (lab === null) return rssAlone('the grader did not start this process (--pid, or a URL alone), so nothing of the lab runs inside it')
  if (lab.sites === null) return rssAlone('the grader cannot load its sampler into this process')
  const warmUp = await ctx.postTo(lab, 'student', { file: warm.file, timeoutMs: timeoutFor(ctx.settings, warm.inflatedBytes) })
  if (!ctx.contract.answered(warmUp)) return notSampled('the sampled run\'s warm-up upload was not answered')
  const mark = await lab.sites.mark()
  if (mark.length === 0) return rssAlone('no allocation sites came back: not a Node process the lab could load its sampler into ' +
    '(another language, or one that drops NODE_OPTIONS)')
  const m = await lab.measure(function uploadAll () {
    return Promise.all(files.map(function upload (file) { return ctx.postTo(lab, 'student', { file, timeoutMs }) }))
  })
  const sites = await lab.sites.since(mark)
  if (sites === null) return notSampled('the sampled process wrote no sites after its load (it died, or its code stopped the sampler)')
  const growth = m.growth > 0 ? m.growth : null
  const allocated = sites.reduce(function add (total, site) { return total + site.allocatedBytes }, 0)
  const lines = topLines(sites, allocated, function sourceOf (file) { return lab.sites.source(file) })
  return {
    sampled: true,
    growthMiB: growth === null ? null : round(growth / MiB, 100),
    allocatedMiB: round(allocated / MiB, 100),
    note: lines.length > 0
      ? SITES_TRUST
      : `no line of its own allocated a sampled byte: what grows is allocated where the sampler does not see (C++, a library called ` +
        `with none of its frames on the stack); ${SITES_TRUST}`,
    lines
  }
}

function rssAlone (why) {
  return { sampled: false, growthMiB: null, allocatedMiB: null, note: `RSS alone: ${why}`, lines: [] }
}

function notSampled (why) {
  return { sampled: false, growthMiB: null, allocatedMiB: null, note: `no line named: ${why}`, lines: [] }
}

/**
 * The lines that allocated most (a line's kinds summed), with their code (from `sourceOf`, the bytes the grader holds) and what
 * it does. A line that made the bytes comes before one that only parsed a text made elsewhere (kind 'parsed',
 * lib/allocation/strings.js): `body += chunk` holds the body, `JSON.parse(body)` reads it.
 */
function topLines (sites, allocated, sourceOf) {
  const byLine = new Map()
  for (const site of sites) {
    const key = lineKey(site)
    const known = byLine.get(key)
      ?? { file: site.file, line: site.line, functionName: site.functionName, kinds: [], allocatedBytes: 0, madeBytes: 0, heldBytes: null }
    if (!known.kinds.includes(site.kind)) known.kinds.push(site.kind)
    known.allocatedBytes += site.allocatedBytes
    if (site.kind !== 'parsed') known.madeBytes += site.allocatedBytes
    if (site.heldBytes !== null) known.heldBytes = (known.heldBytes ?? 0) + site.heldBytes
    byLine.set(key, known)
  }
  return [...byLine.values()]
    .filter(function allocated (l) { return l.allocatedBytes >= MiB / 2 })
    .sort(function madeMost (a, b) { return madeFirst(b) - madeFirst(a) || b.allocatedBytes - a.allocatedBytes })
    .slice(0, TOP_LINES)
    .map(function described (l) {
      const code = codeAt(sourceOf(l.file), l.line)
      return {
        file: shown(l.file),
        line: l.line,
        functionName: l.functionName,
        kinds: l.kinds.sort(),
        allocatedMiB: round(l.allocatedBytes / MiB, 100),
        heldMiB: l.heldBytes === null ? null : round(l.heldBytes / MiB, 100),
        share: allocated > 0 ? round(l.allocatedBytes / allocated, 100) : null,
        code,
        does: code === null ? null : whatItDoes(code)
      }
    })
}

/** 1 for a line that made at least half a MiB, 0 for one that (mostly) only parsed. */
function madeFirst (line) {
  return line.madeBytes >= MiB / 2 ? 1 : 0
}

/**
 * The code of `line` in a file's bytes, trimmed and cut short; null when the grader holds no bytes of that file (the card then
 * names the site alone) or it has no such line.
 */
function codeAt (bytes, line) {
  if (bytes === null) return null
  const text = bytes.toString('utf8').split('\n')[line - 1]
  if (text === undefined) return null
  const code = text.trim()
  return code.length > MOST_CODE_CHARS ? `${code.slice(0, MOST_CODE_CHARS - 1)}…` : code
}

/** What a line of code does with a body, read from its code; null when it matches none of the ways to buffer the lab knows. */
export function whatItDoes (code) {
  return LINE_KINDS.find(function matches (k) { return k.pattern.test(code) })?.does ?? null
}

/**
 * The hint of a memory check whose sites name a line: that line, what it does and what to do instead; null when no line was named
 * (the check's own hint stands).
 */
export function sitesHint (sites) {
  const top = sites.lines[0]
  if (top === undefined) return null
  const where = `${top.file}:${top.line} (${top.functionName}${top.code === null ? '' : `: ${top.code}`})`
  return `Your line ${where} ${top.does ?? 'allocates in proportion to the body'}. ${STREAM_INSTEAD}`
}

/** A file as the card shows it: from the working folder when it is inside it. */
function shown (file) {
  const relative = path.relative(process.cwd(), file)
  return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative.split(path.sep).join('/')
}
