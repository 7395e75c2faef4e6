/**
 * 405 instead of 404 when the path exists but not for this method, with the
 * `Allow` header naming what does: found by asking the app's own routes, so
 * every router, present and future, is covered without declaring it twice.
 */
import { methodNotAllowed } from '../errors/index.js'

function collectMethods (stack, path, found) {
  for (const layer of stack) {
    if (layer.route) {
      if (layer.match(path)) for (const method of Object.keys(layer.route.methods)) found.add(method.toUpperCase())
    } else if (layer.handle?.stack && layer.match(path)) {
      collectMethods(layer.handle.stack, path, found)
    }
  }
  return found
}

/** Middleware to place after every route and before the 404. */
export function methodGuard (app) {
  return function rejectOtherMethods (req, res, next) {
    const allowed = collectMethods(app.router.stack, req.path, new Set())
    if (allowed.size === 0) return next()
    if (allowed.has('GET')) allowed.add('HEAD')
    next(methodNotAllowed(req.method, [...allowed].sort()))
  }
}
