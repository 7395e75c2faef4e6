/**
 * The student's module at POST /student: loaded, checked, and wrapped so
 * that the lab sees it as it sees its own ingest routes (`request` events on
 * the bus, which the dashboard shades on its chart) and the grader can ask
 * what it left behind (async calls still pending, requests whose
 * connection is still open).
 *
 * The contract (docs/lessons/grade.md): the module's default export is an
 * Express handler `(req, res)`, sync or async, or an `express.Router()`
 * whose `post('/')` answers (it is mounted with `use('/student', router)`).
 */
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import express from 'express'
import { performance } from 'node:perf_hooks'
import { msSince, nextRequestId } from '../lib/lab-events.js'

/**
 * Import the student's module.
 * @param {string} file a path
 * @returns {Promise<{ kind: 'handler'|'router', fn: Function }>}
 * @throws {Error} with a message for the student: the import failed, or the default export is not one
 */
export async function loadStudentModule (file) {
  let mod
  try {
    mod = await import(pathToFileURL(path.resolve(file)).href)
  } catch (err) {
    throw new Error(`${path.basename(file)} did not load: ${err?.stack?.split('\n').slice(0, 3).join(' | ') ?? err}`, { cause: err })
  }
  const fn = mod.default
  if (typeof fn !== 'function') {
    throw new Error(`${path.basename(file)} has no default export that is a function: export default async function handler (req, res) { … } or an express.Router()`)
  }
  // an express.Router() is a function with a stack of layers
  const kind = Array.isArray(fn.stack) && typeof fn.use === 'function' ? 'router' : 'handler'
  return { kind, fn }
}

/**
 * The router that mounts the module at POST /student.
 * @param {{ kind: string, fn: Function }} student from loadStudentModule
 * @param {import('node:events').EventEmitter} events the lab's bus
 * @returns {{ router: import('express').Router, stats: () => { calls: number, pending: number, answered: number, open: number } }}
 */
export function studentRoutes (student, events) {
  const router = express.Router()
  const counts = { calls: 0, pending: 0, answered: 0, open: 0 }

  function announce (req, res) {
    const id = nextRequestId()
    const started = performance.now()
    const contentLength = Number(req.headers['content-length'])
    counts.calls++
    counts.open++
    events.emit('request', { phase: 'start', id, route: 'student', time: Date.now(), compressedBytes: Number.isFinite(contentLength) ? contentLength : null })
    res.once('close', function announceEnd () {
      counts.open--
      if (res.headersSent) counts.answered++
      events.emit('request', {
        phase: 'end',
        id,
        route: 'student',
        time: Date.now(),
        status: res.headersSent ? res.statusCode : 0,
        errorType: res.headersSent ? (res.statusCode >= 400 ? `http.${res.statusCode}` : null) : 'no.answer',
        ms: msSince(started)
      })
    })
  }

  if (student.kind === 'router') {
    router.use('/student', function announceRouter (req, res, next) {
      if (req.method === 'POST') announce(req, res)
      next()
    }, student.fn)
  } else {
    router.post('/student', async function studentHandler (req, res, next) {
      announce(req, res)
      counts.pending++
      try {
        // Express 5 sends a rejection (or a throw) to the lab's error handler: a 500, or the error's own 4xx status
        await student.fn(req, res, next)
      } finally {
        counts.pending--
      }
    })
  }
  return {
    router,
    stats: function studentStats () { return { ...counts } }
  }
}
