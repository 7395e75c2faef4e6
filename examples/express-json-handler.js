/**
 * The handler most Express apps run, for the grader's card beside examples/services/: express.json() with a
 * limit, reading the whole body, inflated, into one object. The grader sends gzip as application/octet-stream,
 * so the handler tells express.json() the body is gzip-encoded JSON first. The limit refuses a zip bomb with a
 * 413 after holding up to it; below it, memory grows with every body: a limit is not streaming.
 * docs/lessons/grade.md, "Grade your own service", shows its card beside Fastify's:
 *
 *   npm run grade -- examples/express-json-handler.js --quick
 */
import express from 'express'

const parseJson = express.json({ limit: '64mb', type: function anyType () { return true } })

export default function expressJson (req, res, next) {
  req.headers['content-encoding'] = 'gzip'
  parseJson(req, res, function parsed (err) {
    if (err) return next(err)
    const items = Array.isArray(req.body?.items) ? req.body.items : []
    let idSum = 0n
    for (const record of items) if (Number.isSafeInteger(record?.id)) idSum += BigInt(record.id)
    res.json({ items: items.length, idSum: idSum.toString() })
  })
}
