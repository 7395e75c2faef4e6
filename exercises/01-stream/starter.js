/**
 * Exercise 1, the starter: what most of us write first. Read the whole
 * body, inflate it, parse it, count. It answers right, and it has limits
 * on what it reads and inflates, as a careful route should.
 *
 * Grade it, and look at the memory lines:
 *   npm run grade -- exercises/01-stream/starter.js --quick
 * Then make it stream (exercises/01-stream/README.md).
 */
import getRawBody from 'raw-body'
import { promisify } from 'node:util'
import zlib from 'node:zlib'

const gunzip = promisify(zlib.gunzip)

const MiB = 1024 * 1024
const MAX_COMPRESSED = 100 * MiB
const MAX_INFLATED = 256 * MiB

export default async function bufferedCount (req, res) {
  let doc
  try {
    // the whole compressed body, in one Buffer
    const compressed = await getRawBody(req, { limit: MAX_COMPRESSED })
    // the whole inflated body, in another
    const json = await gunzip(compressed, { maxOutputLength: MAX_INFLATED })
    // the whole document as one string, then as objects
    doc = JSON.parse(json.toString('utf8'))
  } catch (err) {
    const status = err.status ?? (err.code === 'ERR_BUFFER_TOO_LARGE' ? 413 : 400)
    res.status(status).json({ error: { status, message: err.message } })
    return
  }
  if (doc === null || typeof doc !== 'object' || !Array.isArray(doc.items)) {
    res.status(400).json({ error: { status: 400, message: 'expected {"items":[...]}' } })
    return
  }
  let idSum = 0n
  for (const record of doc.items) {
    if (record !== null && typeof record === 'object' && Number.isSafeInteger(record.id)) idSum += BigInt(record.id)
  }
  res.json({ items: doc.items.length, idSum: idSum.toString() })
}
