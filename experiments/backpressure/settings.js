/**
 * The backpressure experiment's one schema: what GET /experiments shows a
 * dashboard, what POST /experiments and the bench's flags are checked
 * against, which params change while a run runs (`live`), and the settings
 * of one upload to POST /backpressure/:token, the same entries read from its
 * query. No module here starts anything.
 */
import { badParameter } from '../../lib/errors/index.js'
import {
  choiceEntry, deepFreeze, givenParams, integerEntry, liveEntry, normalizeBySchema, sizeEntry
} from '../../lib/experiments/params.js'
import { GiB, KiB, MiB } from '../../lib/util/units.js'
import { BATCH_BYTES, MODES } from './stages.js'

/** The slowest paced client: below it the lab's body-rate floor (4 KiB/s, docs/limits.md) would stop the upload. */
export const MIN_RATE = 16 * KiB
/** The longest wait per batch: a consumer of 64 KiB a second. */
export const MAX_DELAY_MS = 1000

/** The schema a dashboard builds its controls from (GET /experiments), and the bench its flags. */
export const params = deepFreeze([
  liveEntry(choiceEntry('mode', {
    values: [...MODES],
    valueLabels: {
      pipeline: 'Honour write()\'s return and wait for \'drain\' (what pipeline() does)',
      ignore: 'Ignore write()\'s return (the classic mistake)'
    },
    label: 'How the batcher writes to the consumer',
    help: 'pipeline: the consumer\'s buffer stays at its highWaterMark and the pause travels back to the client. ' +
      'ignore: every batch is written as it comes, and the consumer\'s buffer grows with the body until the cap stops it. ' +
      'Changes while it runs.'
  })),
  liveEntry(sizeEntry('rate', {
    default: 0,
    min: 0,
    max: GiB,
    label: 'Client rate (bytes/s of gzip, 0: as fast as it can)',
    help: `The client paces its writes to this rate, from ${MIN_RATE} bytes/s, or sends as fast as the connection takes them (0). ` +
      'Changes while it runs.'
  })),
  liveEntry(integerEntry('delayMs', {
    default: 5,
    min: 0,
    max: MAX_DELAY_MS,
    label: `Consumer delay per ${BATCH_BYTES / KiB} KiB batch (ms)`,
    help: 'What each batch costs the consumer, a stand-in for a database write: 50 ms is about 1.3 MB/s. Changes from the next batch.'
  })),
  sizeEntry('highWaterMark', {
    default: '64KiB',
    min: KiB,
    max: 16 * MiB,
    label: 'highWaterMark of each stream',
    help: 'The bound of gunzip\'s two sides, the batcher\'s and the consumer\'s buffer. ' +
      'Set when the upload starts: a change applies to the next run.'
  }),
  sizeEntry('bytes', {
    default: '200MB',
    min: MiB,
    max: 8 * GiB,
    label: 'Body (inflated NDJSON)',
    help: 'The generated NDJSON body\'s inflated size; it is sent gzipped (about a fifth of it).'
  }),
  sizeEntry('cap', {
    default: '128MiB',
    min: MiB,
    max: GiB,
    label: 'Cap on the consumer\'s buffer',
    help: 'Past it the upload is stopped (413 buffer.cap.exceeded). ' +
      'The upload also reserves what it holds in the lab\'s memory budget as it grows.'
  }),
  integerEntry('seconds', {
    default: 30,
    max: 600,
    label: 'Time box (s)',
    help: 'The client hangs up after this long if the body has not been consumed by then.'
  })
])

/** The params a run's upload takes from its query: the server's side of the settings. */
const UPLOAD_PARAMS = Object.freeze(['mode', 'delayMs', 'highWaterMark', 'cap'])

/**
 * Check and complete the parameters a client sent.
 * @param {object} [raw] e.g. { mode: 'ignore', delayMs: 50 }; numbers may come as strings
 * @param {object} [options] normalised app options (`generate.maxBytes` caps `bytes`)
 * @returns {Readonly<{ mode: string, rate: number, delayMs: number, highWaterMark: number, bytes: number, cap: number, seconds: number }>}
 * @throws {LabError} 400 parameter.invalid naming the field
 */
export function normalizeParams (raw, options) {
  const maxBytes = options?.generate?.maxBytes
  const p = normalizeBySchema(params, raw, { max: maxBytes === undefined ? {} : { bytes: maxBytes } })
  if (p.rate !== 0 && p.rate < MIN_RATE) {
    const expected = `0 (as fast as it can) or at least ${MIN_RATE} bytes/s: slower bodies meet the lab's body-rate floor`
    throw badParameter('params.rate', p.rate, expected)
  }
  return Object.freeze(p)
}

/**
 * One upload's settings from its query (POST /backpressure/:token?mode=...): the
 * server's side of the params, checked by the same schema.
 * @param {Record<string, unknown>} query
 * @returns {{ mode: string, delayMs: number, highWaterMark: number, cap: number }} a new object, the upload's to change
 * @throws {LabError} 400 parameter.invalid naming the field
 */
export function uploadSettings (query) {
  const schema = params.filter(function ofUpload (p) { return UPLOAD_PARAMS.includes(p.name) })
  return normalizeBySchema(schema, query)
}

/**
 * An upload's live settings changed (PATCH /backpressure/:token): mode and delayMs only.
 * @param {object} current the upload's settings now
 * @param {unknown} raw e.g. { delayMs: 50 }
 * @returns {{ mode: string, delayMs: number }} only what changes
 * @throws {LabError} 400 parameter.invalid naming the field
 */
export function changedUploadSettings (current, raw) {
  const schema = params.filter(function ofChange (p) { return p.name === 'mode' || p.name === 'delayMs' })
  const given = givenParams(schema, raw)
  const checked = normalizeBySchema(schema, { mode: current.mode, delayMs: current.delayMs, ...given })
  return { mode: checked.mode, delayMs: checked.delayMs }
}
