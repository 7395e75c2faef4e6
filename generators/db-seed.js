#!/usr/bin/env node
/**
 * Seed the database export's tables:
 *
 *   npm run db:seed -- --items 1000000 --desks 200000
 *   DATABASE_URL=postgres://lab@127.0.0.1/lab npm run db:seed -- --items 10000000
 *
 * Idempotent: the same sizes again do nothing, other sizes reseed (in one
 * transaction: an interrupted seed leaves the old data). Without a database
 * URL it seeds the embedded PGlite in test-data/pglite, which the lab must
 * not have open at the same time (its lock says so).
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { DEFAULTS } from '../lib/config/options.js'
import { startEmbedded } from '../lib/db/embedded.js'
import { DATABASE_DEFAULTS, normalizeDatabaseOptions, redactUrl } from '../lib/db/options.js'
import { SEED_DEFAULTS, SEED_LIMITS, normalizeSeedSizes, seedDatabase } from '../lib/db/seed.js'
import { formatDuration } from '../lib/util/units.js'

const USAGE = `Usage: npm run db:seed -- [options]

Create and fill the desks and items tables of the database export experiment.
The same sizes again do nothing; other sizes reseed.

Options:
  --items N            items, 0..${SEED_LIMITS.items} (default ${SEED_DEFAULTS.items})
  --desks N            desks, 1..${SEED_LIMITS.desks} (default ${SEED_DEFAULTS.desks}); each item is on one
  --database-url URL   a PostgreSQL server (default: env DATABASE_URL, else the embedded
                       PGlite in ${path.relative(process.cwd(), path.join(DEFAULTS.dataDir, 'pglite')) || '.'})
  -q, --quiet          no progress, only the summary line
  -h, --help           show this help
`

const ARGS = Object.freeze({
  items: { type: 'string' },
  desks: { type: 'string' },
  'database-url': { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
  help: { type: 'boolean', short: 'h' }
})

const EXIT_USAGE = 2
const EXIT_INTERRUPTED = 130
const BAR_WIDTH = 24

/**
 * Run the seed CLI.
 * @returns {Promise<number>} the exit code
 */
async function main (argv = process.argv.slice(2), { stdout = process.stdout, stderr = process.stderr, env = process.env } = {}) {
  let values
  let sizes
  let database
  try {
    values = parseArgs({ args: argv, options: ARGS, strict: true, allowPositionals: false }).values
    if (values.help) {
      stdout.write(USAGE)
      return 0
    }
    sizes = normalizeSeedSizes({
      items: values.items === undefined ? SEED_DEFAULTS.items : wholeNumber('items', values.items),
      desks: values.desks === undefined ? SEED_DEFAULTS.desks : wholeNumber('desks', values.desks)
    }, '--')
    database = normalizeDatabaseOptions({ url: values['database-url'] ?? (env.DATABASE_URL || null) }, DEFAULTS)
  } catch (err) {
    stderr.write(`db:seed: ${err.message}\nRun with --help for usage.\n`)
    return EXIT_USAGE
  }

  const interrupted = new AbortController()
  function cancelOnInterrupt () {
    interrupted.abort()
  }
  process.once('SIGINT', cancelOnInterrupt)
  let embedded = null
  let client = null
  const progress = values.quiet ? null : createProgress(stderr)
  try {
    if (database.kind === 'embedded') {
      embedded = await startEmbedded({ dir: database.pgliteDir, timeoutMs: DATABASE_DEFAULTS.startTimeoutMs })
      // its private socket (or loopback port) and the random password of this start
      client = new pg.Client({ ...embedded.connection })
    } else {
      client = new pg.Client({ connectionString: database.url })
    }
    await client.connect()
    const where = database.kind === 'embedded'
      ? `the embedded PGlite in ${path.relative(process.cwd(), database.pgliteDir) || '.'}`
      : redactUrl(database.url)
    const outcome = await seedDatabase(client, sizes, { onProgress: progress?.update, signal: interrupted.signal })
    progress?.end(outcome.changed)
    stdout.write(outcome.changed
      ? `seeded ${where}: ${outcome.desks} desks, ${outcome.items} items in ${formatDuration(outcome.ms)}\n`
      : `${where} already holds ${outcome.desks} desks and ${outcome.items} items: nothing to do\n`)
    return 0
  } catch (err) {
    progress?.end(false)
    if (interrupted.signal.aborted) {
      stderr.write('db:seed: interrupted, the previous data is unchanged\n')
      return EXIT_INTERRUPTED
    }
    stderr.write(`db:seed: ${err.message}\n`)
    return 1
  } finally {
    process.off('SIGINT', cancelOnInterrupt)
    await client?.end().catch(function ignoreEndError () {})
    await embedded?.stop()
  }
}

function wholeNumber (name, text) {
  if (!/^\d{1,12}$/.test(text)) throw new TypeError(`--${name} takes a whole number, got "${text}"`)
  return Number(text)
}

/** A bar redrawn in place on a terminal; on anything else (logs, CI) a plain line every 10%. */
function createProgress (stream) {
  const tty = Boolean(stream.isTTY)
  // from the first rows, not from the database's start
  let started = null
  let lastTenth = -1
  let drawn = false
  return {
    update: function showProgress ({ done, total, stage }) {
      started ??= performance.now()
      const fraction = total === 0 ? 1 : done / total
      const percent = (fraction * 100).toFixed(1).padStart(5)
      const text = `${percent}%  ${done}/${total} rows  ${stage}  ${formatDuration(performance.now() - started)}`
      if (tty) {
        const filled = Math.round(fraction * BAR_WIDTH)
        stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${text}\x1b[K`)
        drawn = true
        return
      }
      const tenth = Math.floor(fraction * 10)
      if (tenth > lastTenth || stage === 'indexes' || stage === 'analyze') {
        lastTenth = tenth
        stream.write(`db:seed: ${text}\n`)
      }
    },
    end: function endProgress () {
      if (tty && drawn) stream.write('\n')
    }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(function setExitCode (code) {
    process.exitCode = code
  })
}
