#!/usr/bin/env node
/**
 * Write a seeded test document to disk, atomically:
 *
 *   npm run generate -- --size 10000 --format json --seed 1 --level 6 --out test-data/test.json.gz
 *   npm run generate -- --bytes 500MB --format ndjson
 *   npm run generate -- --bomb ratio --bytes 10GB
 *   npm run generate -- --bomb ratio --codec br --bytes 10GB
 *
 * The same parameters and checks as GET /generate, so a file made here and a download from
 * the lab are byte-for-byte the same.
 */
import fs from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { LabError } from '../lib/errors/index.js'
import { displayPath, writeAtomically } from '../lib/util/atomic-file.js'
import { DEFAULTS } from '../lib/config/options.js'
import { formatBytes, formatDuration, formatStopwatch } from '../lib/util/units.js'
import { BOMB_CODECS, BOMB_DEFAULTS, BOMB_VARIANTS, createBomb, normalizeBombParams } from '../lib/generate/bombs.js'
import { SAVE_FILE_NAMES, createGzipStream, normalizeGenerateParams } from '../lib/generate/items.js'

const USAGE = `Usage: npm run generate -- [options]

Write a seeded, gzipped JSON test document (atomically: temp file, then rename).

Options:
  --size <n>       number of items, 0..${DEFAULTS.generate.maxItems} (default ${DEFAULTS.generate.defaultSize})
  --bytes <size>   approximate inflated size instead of --size, e.g. 500MB, 1.5GiB
                   (up to ${formatBytes(DEFAULTS.generate.maxBytes)})
  --format <f>     json ({"items":[...]}), array ([...]) or ndjson (default json)
  --seed <n>       PRNG seed, 0..4294967295 (default 1): same seed, same bytes
  --level <n>      gzip level, 0..9 (default 6)
  -o, --out <file> where to write (default ${displayPath(DEFAULTS.dataDir)}/${SAVE_FILE_NAMES.json},
                   ${SAVE_FILE_NAMES.array} or ${SAVE_FILE_NAMES.ndjson} by format);
                   an existing directory gets the default name inside it
  -q, --quiet      no progress, only the summary line
  -h, --help       show this help

Zip bombs (streamed as they are made: a 10 GB bomb costs about 10 MB of disk):
  --bomb <variant> ${BOMB_VARIANTS.join(', ')} (see docs/zip-bombs.md)
  --codec <c>      ${BOMB_CODECS.join(', ')} (default ${BOMB_DEFAULTS.codec}; br and zstd go through
                   zlib's compressor, which reads every inflated byte: the line says how long)
  --bytes <size>   inflated size of the JSON document (default ${BOMB_DEFAULTS.bytes / 1e9}GB)
  --depth <n>      depth: nesting depth instead of --bytes (default ${BOMB_DEFAULTS.depth})
  --members <n>    members: gzip members (default ${BOMB_DEFAULTS.members})
  --layers <n>     chained: layers of the codec (default ${BOMB_DEFAULTS.layers})
  -o, --out <file> default ${displayPath(DEFAULTS.dataDir)}/streamlab-bomb-<variant>-<bytes>B.json.gz
`

const ARGS = Object.freeze({
  size: { type: 'string' },
  bytes: { type: 'string' },
  format: { type: 'string' },
  seed: { type: 'string' },
  level: { type: 'string' },
  bomb: { type: 'string' },
  codec: { type: 'string' },
  depth: { type: 'string' },
  members: { type: 'string' },
  layers: { type: 'string' },
  out: { type: 'string', short: 'o' },
  quiet: { type: 'boolean', short: 'q' },
  help: { type: 'boolean', short: 'h' }
})

/** Exit code for bad usage, as most CLIs do. */
const EXIT_USAGE = 2
const EXIT_INTERRUPTED = 130
const TICK_MS = 100

/** Run the generator CLI on the arguments after `node generators/cli.js`; resolves to the exit code. */
async function main (argv = process.argv.slice(2), { stdout = process.stdout, stderr = process.stderr } = {}) {
  let values
  try {
    values = parseArgs({ args: argv, options: ARGS, strict: true, allowPositionals: false }).values
  } catch (err) {
    stderr.write(`generate: ${err.message}\nRun with --help for usage.\n`)
    return EXIT_USAGE
  }
  if (values.help) {
    stdout.write(USAGE)
    return 0
  }

  if (values.bomb !== undefined) return writeBomb(values, { stdout, stderr })
  for (const flag of ['depth', 'members', 'layers', 'codec']) {
    if (values[flag] !== undefined) {
      stderr.write(`generate: --${flag} is for zip bombs: give --bomb <variant> too\n`)
      return EXIT_USAGE
    }
  }

  let params
  try {
    params = normalizeGenerateParams(values, DEFAULTS.generate)
  } catch (err) {
    return usageError(err, stderr)
  }

  const out = outputPath(values.out, SAVE_FILE_NAMES[params.format])
  const { json, gzip } = createGzipStream(params)
  const interrupted = new AbortController()
  function cancelOnInterrupt () {
    interrupted.abort()
  }
  process.once('SIGINT', cancelOnInterrupt)
  const stopProgress = values.quiet ? function noProgress () {} : startProgress(json, params, stderr)
  const started = performance.now()
  try {
    const written = await writeAtomically(path.dirname(out), path.basename(out), [json, gzip], {
      signal: interrupted.signal
    })
    stopProgress(true)
    const seconds = (performance.now() - started) / 1000
    stdout.write(summaryLine(written, json, seconds) + '\n')
    return 0
  } catch (err) {
    stopProgress(false)
    return writeFailed(err, interrupted.signal, out, stderr)
  } finally {
    process.off('SIGINT', cancelOnInterrupt)
  }
}

/** The exit code of a write that did not finish, after saying why: Ctrl-C, or the error. */
function writeFailed (err, signal, out, stderr) {
  if (signal.aborted) {
    stderr.write('generate: interrupted, nothing written\n')
    return EXIT_INTERRUPTED
  }
  stderr.write(`generate: could not write ${displayPath(out)}: ${err.message}\n`)
  return 1
}

/** A bad flag value, said in the CLI's terms; anything else is a bug and is thrown. */
function usageError (err, stderr) {
  if (!(err instanceof LabError)) throw err
  const { parameter, value, allowed } = err.details
  const flag = parameter === 'variant' ? 'bomb' : parameter
  stderr.write(`generate: --${flag} ${JSON.stringify(value)} is invalid: expected ${allowed}\n`)
  return EXIT_USAGE
}

/**
 * `--bomb <variant>`: write a zip bomb atomically. br and zstd are never read from the lab's cache, so the
 * line's time is what making one costs (docs/zip-bombs.md).
 */
async function writeBomb (values, { stdout, stderr }) {
  for (const flag of ['size', 'format', 'seed', 'level']) {
    if (values[flag] !== undefined) {
      stderr.write(`generate: --${flag} is not a bomb parameter (bombs take --bytes, --depth, --members, --layers)\n`)
      return EXIT_USAGE
    }
  }
  let bomb
  try {
    const { bomb: variant, codec, bytes, depth, members, layers } = values
    bomb = createBomb(normalizeBombParams({ variant, codec, bytes, depth, members, layers }), { cacheDir: null })
  } catch (err) {
    return usageError(err, stderr)
  }
  const out = outputPath(values.out, bomb.fileName)
  const interrupted = new AbortController()
  function cancelOnInterrupt () {
    interrupted.abort()
  }
  process.once('SIGINT', cancelOnInterrupt)
  const started = performance.now()
  try {
    const written = await writeAtomically(path.dirname(out), path.basename(out), bomb.streams, { signal: interrupted.signal })
    const seconds = (performance.now() - started) / 1000
    const ratio = Math.round(bomb.inflatedBytes / written.bytes)
    const headers = Object.entries(bomb.uploadHeaders).map(function headerFlag ([name, value]) {
      return `-H '${name}: ${value}'`
    }).join(' ')
    const layers = `${bomb.layers} ${bomb.params.codec} layer${bomb.layers > 1 ? 's' : ''}`
    stdout.write(`wrote ${displayPath(written.path)}: ${bomb.params.variant} bomb, ${formatBytes(bomb.inflatedBytes)} inflated ` +
      `(${bomb.inflatedBytes} B), ${formatBytes(written.bytes)} compressed (${written.bytes} B, ${ratio}:1), ` +
      `${layers}, ${formatDuration(seconds * 1000)}\n` +
      `send it with: curl -X POST ${headers} --data-binary @${displayPath(written.path)} http://localhost:3000/good\n`)
    return 0
  } catch (err) {
    return writeFailed(err, interrupted.signal, out, stderr)
  } finally {
    process.off('SIGINT', cancelOnInterrupt)
  }
}

/** --out as given, or inside it when it is a directory, or the default name in the data dir. */
function outputPath (out, defaultName) {
  if (out === undefined) return path.join(DEFAULTS.dataDir, defaultName)
  const resolved = path.resolve(out)
  let isDirectory = false
  try {
    isDirectory = fs.statSync(resolved).isDirectory()
  } catch {
    // missing, or under something that is not a directory: the write itself says what is wrong
  }
  return isDirectory || out.endsWith('/') || out.endsWith(path.sep)
    ? path.join(resolved, defaultName)
    : resolved
}

function summaryLine (written, json, seconds) {
  const ratio = written.bytes > 0 ? (json.bytes / written.bytes).toFixed(2) : '-'
  return `wrote ${displayPath(written.path)}: ${json.items} items, ` +
    `${formatBytes(json.bytes)} inflated, ${formatBytes(written.bytes)} compressed (${ratio}:1), ` +
    `${formatDuration(seconds * 1000)}, ${megabytesPerSecond(json.bytes, seconds)} MB/s`
}

/**
 * Report progress on `stream`: a bar redrawn in place (at most 10x/s) on a terminal,
 * a plain line every 10% otherwise (logs and CI). Returns the function that stops it.
 */
function startProgress (json, params, stream) {
  const tty = Boolean(stream.isTTY)
  const started = performance.now()
  let lastTenth = 0
  let drawn = false

  function fraction () {
    if (params.bytes !== null) return Math.min(1, json.bytes / params.bytes)
    return params.size === 0 ? 1 : json.items / params.size
  }

  function report () {
    const done = fraction()
    const seconds = (performance.now() - started) / 1000
    const rate = megabytesPerSecond(json.bytes, seconds)
    const counts = `${json.items} items, ${formatBytes(json.bytes)}`
    if (tty) {
      const eta = done > 0 ? formatStopwatch(1000 * seconds * (1 - done) / done) : '?'
      const bar = progressBar(done, 24)
      stream.write(`\r${bar} ${percent(done)}  ${counts}  ${rate} MB/s  ETA ${eta}\x1b[K`)
      drawn = true
      return
    }
    const tenth = Math.floor(done * 10)
    if (tenth > lastTenth && tenth < 10) {
      lastTenth = tenth
      stream.write(`generate: ${percent(done)} (${counts}, ${rate} MB/s)\n`)
    }
  }

  const timer = setInterval(report, TICK_MS)
  timer.unref()
  return function stopProgress (completed) {
    clearInterval(timer)
    if (!tty) return
    if (completed) report()
    if (completed || drawn) stream.write('\n')
  }
}

function progressBar (done, width) {
  const filled = Math.round(done * width)
  return '[' + '#'.repeat(filled) + '.'.repeat(width - filled) + ']'
}

function percent (done) {
  return `${(done * 100).toFixed(1).padStart(5)}%`
}

function megabytesPerSecond (bytes, seconds) {
  return seconds > 0 ? (bytes / 1e6 / seconds).toFixed(1) : '-'
}


if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(function setExitCode (code) {
    process.exitCode = code
  })
}
