/**
 * The resolve hook of allow-packages.js (it runs on the loader's own
 * thread): a bare specifier of an allowed package is resolved from the
 * lab's package.json, wherever the submission sits; any other goes the
 * usual way.
 */
import { packageName } from './packages.js'

const LAB_PACKAGE = new URL('../../package.json', import.meta.url).href

let allowed = []

/** @param {{ allowed: string[] }} data from register() */
export function initialize (data) {
  allowed = data.allowed
}

/**
 * Node's resolve hook: an allowed package from the lab's package.json (the lab's copy, as root: a
 * copy of the package the submission's folder holds, hoisted in a project, is not the submission's
 * user's to read), any other specifier the usual way.
 */
export async function resolve (specifier, context, nextResolve) {
  // a package's own imports keep the versions it was installed with
  if (!allowed.includes(packageName(specifier)) || insidePackages(context.parentURL)) return nextResolve(specifier, context)
  return nextResolve(specifier, { ...context, parentURL: LAB_PACKAGE })
}

/** Whether the importing module belongs to an installed package, not to the submission. */
function insidePackages (parentURL) {
  return typeof parentURL === 'string' && parentURL.includes('/node_modules/')
}
