/**
 * Runs in a worker thread: V8's JSON.parse on one batch from the scanner,
 * then the tally. Returns plain data only.
 */
import { createTally, tallyRecords, tallyNdjson, locateJsonError } from './tally.js'

/**
 * @param {{ kind: 'records'|'values'|'lines', bytes: Uint8Array }} batch
 * @returns {{ tally: object|null, error: {offset: number, reason: string}|null }}
 *   error offsets are relative to the batch's first value
 */
export default function parseBatch ({ kind, bytes, maxDepth = Infinity }) {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
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
