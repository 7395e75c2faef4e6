/**
 * Imported first by the process that loads a submission outside the lab
 * (`node --import`): Node resolves a bare specifier ('raw-body') from the
 * importing file's folder upwards, so a submission in /tmp finds nothing,
 * and ESM resolution reads no NODE_PATH. A resolve hook
 * (allow-packages-hooks.js) resolves the allowed packages (packages.js)
 * again from the lab's package.json when the usual resolution fails; any
 * other package still fails as it would. A CommonJS submission's require()
 * does not pass through that hook, so the CommonJS resolver gets the same
 * fallback.
 */
import Module, { createRequire, register } from 'node:module'
import { ALLOWED_PACKAGES, packageName } from './packages.js'

register('./allow-packages-hooks.js', import.meta.url, { data: { allowed: ALLOWED_PACKAGES } })

const requireFromLab = createRequire(new URL('../../package.json', import.meta.url))
// Module._resolveFilename is the one resolver require() calls on every Node the lab runs on
// (module.registerHooks, which would cover require, is from Node 22.15)
const resolveFilename = Module._resolveFilename

Module._resolveFilename = function resolveAllowedPackage (request, parent, isMain, options) {
  try {
    return resolveFilename.call(this, request, parent, isMain, options)
  } catch (err) {
    if (err?.code !== 'MODULE_NOT_FOUND' || !ALLOWED_PACKAGES.includes(packageName(request))) throw err
    return requireFromLab.resolve(request)
  }
}
