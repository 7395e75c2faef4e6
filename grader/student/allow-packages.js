/** Imported first (`node --import`): the allowed packages resolve from the lab's package.json (student/README.md). */
import Module, { createRequire, register } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ALLOWED_PACKAGES, packageName } from './packages.js'

register('./allow-packages-hooks.js', import.meta.url, { data: { allowed: ALLOWED_PACKAGES } })

const LAB_PACKAGE = new URL('../../package.json', import.meta.url)
const requireFromLab = createRequire(LAB_PACKAGE)
const LAB_PACKAGE_PATH = fileURLToPath(LAB_PACKAGE)
// Module._resolveFilename is the one resolver require() calls on every Node the lab runs on
// (module.registerHooks, which would cover require, is from Node 22.15)
const resolveFilename = Module._resolveFilename

Module._resolveFilename = function resolveAllowedPackage (request, parent, isMain, options) {
  // a package's own requires keep the versions it was installed with
  const from = parent?.filename
  const ownCode = typeof from === 'string' && from !== LAB_PACKAGE_PATH && !from.includes(`${path.sep}node_modules${path.sep}`)
  if (ownCode && ALLOWED_PACKAGES.includes(packageName(request))) return requireFromLab.resolve(request)
  return resolveFilename.call(this, request, parent, isMain, options)
}
