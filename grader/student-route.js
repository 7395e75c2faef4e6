/**
 * The student's module at POST /student: loaded, checked, and mounted on
 * the student's own small server (grader/student-child.js). Nothing here
 * counts or reports: whatever runs in the student's process could change
 * it, so the grader takes its figures from outside (grader/process-tree.js).
 *
 * The contract (docs/lessons/grade.md): the module's default export is an
 * Express handler `(req, res)`, sync or async, or an `express.Router()`
 * whose `post('/')` answers (it is mounted with `use('/student', router)`).
 */
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import express from 'express'

/** What grader/student-child.js writes on stderr before the reason a module did not load; it then exits 3. */
export const LOAD_FAILED_MARK = 'student-child: load failed: '
export const EXIT_LOAD_FAILED = 3

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
 * @returns {import('express').Router}
 */
export function studentRoutes (student) {
  const router = express.Router({ caseSensitive: true, strict: true })
  if (student.kind === 'router') {
    router.use('/student', student.fn)
  } else {
    router.post('/student', function studentHandler (req, res, next) {
      // Express 5 sends a rejection (or a throw) to the error handler: a 500, or the error's own 4xx status
      return student.fn(req, res, next)
    })
  }
  return router
}
