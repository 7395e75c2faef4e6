/** The resolve hook of allow-packages.js, on the loader's own thread. */
import { packageName } from './packages.js'

const LAB_PACKAGE = new URL('../../package.json', import.meta.url).href

let allowed = []

export function initialize (data) {
  allowed = data.allowed
}

/** An allowed package resolves from the lab's package.json (the copy a submission's project hoists may be unreadable to it). */
export async function resolve (specifier, context, nextResolve) {
  // a package's own imports keep the versions it was installed with
  if (!allowed.includes(packageName(specifier)) || insidePackages(context.parentURL)) return nextResolve(specifier, context)
  return nextResolve(specifier, { ...context, parentURL: LAB_PACKAGE })
}

/** Whether the importing module belongs to an installed package, not to the submission. */
function insidePackages (parentURL) {
  return typeof parentURL === 'string' && parentURL.includes('/node_modules/')
}
