/** The packages a submission may import besides Node's (exercises/README.md), and the module that resolves them. */
import { fileURLToPath } from 'node:url'

export const ALLOWED_PACKAGES = Object.freeze(['raw-body', '@streamparser/json', 'express'])

/** The package a bare specifier names: 'express/lib/router' -> 'express', '@scope/name/x' -> '@scope/name'. */
export function packageName (specifier) {
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

/** allow-packages.js's path: the process that loads a submission imports it first (`node --import`). */
export const ALLOW_PACKAGES_IMPORT = fileURLToPath(new URL('./allow-packages.js', import.meta.url))
