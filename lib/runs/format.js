/**
 * The run record, format 1: one JSON file per finished run, what was run, where, what it reported and its timeline
 * (docs/runs.md). `readRunRecord(text)` is the one door in: a record read from disk, from a request or from another machine is
 * data until it has passed it, and it never runs, imports or evaluates anything it holds. A record that does not pass is refused
 * with 422 `run.invalid`, whose message names the first field at fault. More: README.md, "format.js".
 */
import { runInvalid } from '../errors/index.js'
import { RECORD_MAX_BYTES, checkRecordText } from './check.js'

export { RECORD_MAX_BYTES, RUN_FORMAT, RUN_ID, RUN_KIND, RUN_SOURCES, RUN_STATUSES, oversize, recordProblem } from './check.js'

/**
 * Read a run record from its text: at most RECORD_MAX_BYTES, JSON, and of this format (the rules: lib/runs/check.js).
 * @param {string} [where] how the error names what was read (a file, an id)
 * @returns {object} the record
 * @throws {LabError} 422 run.invalid naming the field at fault (`(file)` for the size, `(json)` for the syntax)
 */
export function readRunRecord (text, where = 'the record') {
  if (typeof text !== 'string' && !Buffer.isBuffer(text)) throw runInvalid(where, '(record)', 'is not text')
  const bytes = typeof text === 'string' ? Buffer.byteLength(text) : text.length
  // past the bound the text is not even decoded
  const { record, problem } = checkRecordText(bytes > RECORD_MAX_BYTES ? '' : String(text), bytes)
  if (problem !== null) throw runInvalid(where, problem.field, problem.problem)
  return record
}
