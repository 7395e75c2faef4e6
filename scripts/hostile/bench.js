/**
 * `npm run bench -- hostile`: the attacks on the bounded-memory promise (what
 * any client can cost is bounded by construction, docs/hostile.md), each
 * replayed on a fresh lab started as a user starts it, judged "held" or
 * "BROKEN". The mechanics live beside it in scripts/hostile/.
 */
import { attackRows } from './attacks.js'
import { runHostile, SAMPLE_MS } from './run.js'
import { FLAG_SPECS, flagLines, normalizeHostileOptions } from './params.js'
import { hostileCharts, hostileNotes, hostileTable } from './verdict.js'

export const name = 'hostile'
export const summary = 'attacks on a default lab: kills, memory, a normal request, leftovers'
export const usage = `Options (hostile):
  --attacks LIST      all (default), attack numbers 1 to 9, or ids: dense-objects, dense-arrays,
                      dense-numbers, abandoned-uploads, ratio-bombs, big-bad-body, buffered-uploads,
                      batch-export, drip-clients, metrics-flood, disk-fill, wide-windows, window-bombs
  --routes LIST       the ingest routes the attacks on them (1, 2, 3, 6, 9) go to: bad, good, express-json,
                      streamparser-json; default each attack's own and streamparser-json, a row each
  --bomb-codecs LIST  the codecs of the ratio bombs (3), and of 9 where windowed (br, zstd): gzip, deflate, br, zstd (Node 22.15 on);
                      default every one this Node has (${normalizeHostileOptions().bombCodecs.join(', ')})
  --quick             small sizes and short holds for every attack
  --server-flag FLAG  extra flag for server.js, e.g. --server-flag=--memory-limit=512MiB (repeatable)
Sizes and bounds (durations: 10s, 50ms, 2m):
${flagLines()}`

export const options = FLAG_SPECS

/** Normalise parsed flags; a TypeError names the bad flag, or says the choice leaves nothing to run. */
export function normalize (values) {
  const opts = normalizeHostileOptions(values)
  if (attackRows(opts.attacks, opts.routes).length === 0) {
    throw new TypeError(`--routes ${opts.routes.join(',')} leaves none of ${opts.attacks.join(', ')} to run: ` +
      'each goes to its own route or streamparser-json')
  }
  return opts
}

/**
 * Run it.
 * @returns {Promise<{ title: string, markdown: string, charts: object[], data: object }>}
 */
export async function run (opts, report) {
  const result = await runHostile(opts, report)
  return {
    title: 'Hostile clients: does the lab hold?',
    markdown: `${hostileTable(result.rows)}\n\n${hostileNotes(result, opts, SAMPLE_MS)}`,
    charts: hostileCharts(result.rows),
    data: {
      dataDir: result.dataDir, ownDataDirs: result.ownDataDirs, sampleMs: SAMPLE_MS, growthBound: opts.growthBound, attacks: result.rows
    }
  }
}
