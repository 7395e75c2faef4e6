/** The module at POST /student (docs/lessons/grade.md); an async call keeps its connection's descriptor open until it settles. */
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import express from 'express'
import { ALLOWED_PACKAGES, packageName } from './packages.js'

/** What student-child.js writes on stderr before the reason a module did not load; it then exits 3. */
export const LOAD_FAILED_MARK = 'student-child: load failed: '
export const EXIT_LOAD_FAILED = 3

/** Import the student's module: `{ kind: 'handler'|'router', fn }`; throws a message for the student otherwise. */
export async function loadStudentModule (file) {
  let mod
  try {
    mod = await import(pathToFileURL(path.resolve(file)).href)
  } catch (err) {
    const missing = missingPackage(err)
    if (missing !== null) {
      throw new Error(`${path.basename(file)} did not load: it imports ${missing}, which Node cannot find from its folder; the grader ` +
        `adds only ${ALLOWED_PACKAGES.join(', ')} to Node's own modules (exercises/README.md)`, { cause: err })
    }
    throw new Error(`${path.basename(file)} did not load: ${err?.stack?.split('\n').slice(0, 3).join(' | ') ?? err}`, { cause: err })
  }
  const fn = mod.default
  if (typeof fn !== 'function') {
    throw new Error(`${path.basename(file)} has no default export that is a function: export default async function handler (req, ` +
      `res) { … } or an express.Router()`)
  }
  // an express.Router() is a function with a stack of layers
  const kind = Array.isArray(fn.stack) && typeof fn.use === 'function' ? 'router' : 'handler'
  return { kind, fn }
}

/** The package a failed import or require() could not find, when it is a package (not a file), else null. */
function missingPackage (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' && err?.code !== 'MODULE_NOT_FOUND') return null
  const match = /Cannot find (?:package|module) '([^']+)'/.exec(err.message)
  if (match === null || /^(\.|\/|[A-Za-z]:|file:|node:)/.test(match[1])) return null
  const name = packageName(match[1])
  return ALLOWED_PACKAGES.includes(name) ? null : name
}

/** The router that mounts the module (from loadStudentModule) at POST /student. */
export function studentRoutes (student) {
  const router = express.Router({ caseSensitive: true, strict: true })
  if (student.kind === 'router') {
    router.use('/student', student.fn)
  } else {
    router.post('/student', function studentHandler (req, res, next) {
      const release = holdDescriptor(req.socket)
      let call
      try {
        call = student.fn(req, res, next)
      } catch (err) {
        release()
        throw err
      }
      // a sync handler's call is over when it returns; an async one's when its promise settles
      if (call === null || typeof call?.then !== 'function') release()
      else call.then(release, release)
      // Express 5 sends a rejection (or a throw) to the error handler: a 500, or the error's own 4xx status
      return call
    })
  }
  return router
}

/** handle -> { calls, close, deferred }: the connections whose descriptor a call keeps open */
const holds = new WeakMap()

/** Keep a connection's descriptor open until the returned function is called: Node sees the close, the kernel the descriptor. */
function holdDescriptor (socket) {
  const handle = socket?._handle
  if (handle === null || handle === undefined || typeof handle.close !== 'function') return function nothingHeld () {}
  let hold = holds.get(handle)
  if (hold === undefined) {
    hold = { calls: 0, close: handle.close, deferred: false }
    holds.set(handle, hold)
    const kept = hold
    handle.close = function closeWhenCallsEnd (callback) {
      if (kept.calls === 0) return kept.close.call(handle, callback)
      kept.deferred = true
      if (typeof callback === 'function') process.nextTick(callback)
    }
  }
  hold.calls++
  let released = false
  const kept = hold
  return function releaseDescriptor () {
    if (released) return
    released = true
    kept.calls--
    if (kept.calls === 0 && kept.deferred) {
      kept.deferred = false
      kept.close.call(handle, function closed () {})
    }
  }
}
