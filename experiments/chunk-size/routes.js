/** GET /files/chunk?hwm=65536&mode=buffer|string: the generated file read `hwm` bytes at a time (server.js has the mechanics). */
import express from 'express'
import { ensureChunkFile, normalizeChunkQuery, serveChunkFile, setChunkFileHeaders } from './server.js'

export function chunkSizeRoutes (opts) {
  const router = express.Router({ caseSensitive: true, strict: true })
  router.get('/files/chunk', async function serveChunk (req, res) {
    const how = normalizeChunkQuery(req.query)
    const file = await ensureChunkFile(opts.dataDir)
    if (req.method === 'HEAD') {
      setChunkFileHeaders(res, file)
      res.end()
      return
    }
    try {
      await serveChunkFile(res, { file, ...how })
    } catch (err) {
      // the client hung up: pipeline has closed the file, nothing is left to answer
      if (err.code === 'ERR_STREAM_PREMATURE_CLOSE') return
      throw err
    }
  })
  return router
}
