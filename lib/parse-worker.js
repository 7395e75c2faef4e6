/**
 * Runs in a worker thread: V8's JSON.parse on one batch from the scanner,
 * then the tally. Returns plain data only.
 */
import { createTally, tallyRecords, tallyNdjson, locateJsonError } from './tally.js'
import { projectParseCost } from './parse-cost.js'

/**
 * @param {{ kind: 'records'|'values'|'lines', bytes: Uint8Array, maxDepth?: number, maxCost?: number }} batch
 *   maxCost: the most heap JSON.parse may be projected to take (lib/parse-cost.js); a batch
 *   projected past it is not parsed at all
 * @returns {{ tally: object|null, error: {offset: number, reason: string}|null, tooDense?: { projected: number } }}
 *   error offsets are relative to the batch's first value
 */
export default function parseBatch ({ kind, bytes, maxDepth = Infinity, maxCost = Infinity }) {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (maxCost !== Infinity) {
    // JSON.parse cannot be stopped half-way: what would not fit is refused before it starts
    const projected = projectParseCost(buf).heap
    if (projected > maxCost) return { tally: null, error: null, tooDense: { projected } }
  }
  const tally = createTally()
  if (kind === 'lines') {
    const error = tallyNdjson(buf, tally, maxDepth)
    return { tally, error }
  }
  let values
  try {
    values = JSON.parse(buf.toString('utf8'))
  } catch (err) {
    const located = locateJsonError(buf, 0, buf.length, err)
    // the batch is `[` + values + `]`: shift back past the added bracket
    return { tally: null, error: { offset: located.offset < 0 ? -1 : located.offset - 1, reason: located.reason } }
  }
  if (kind === 'records') tallyRecords(tally, values)
  return { tally: kind === 'records' ? tally : null, error: null }
}
