/**
 * The resolve hook of allow-packages.js (it runs on the loader's own
 * thread): a bare specifier of an allowed package that the usual
 * resolution cannot find is resolved from the lab's package.json instead.
 */
import { packageName } from './packages.js'

const LAB_PACKAGE = new URL('../../package.json', import.meta.url).href

let allowed = []

/** @param {{ allowed: string[] }} data from register() */
export function initialize (data) {
  allowed = data.allowed
}

/** Node's resolve hook: the usual resolution first, the lab's package.json for an allowed package it cannot find. */
export async function resolve (specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context)
  } catch (err) {
    if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !allowed.includes(packageName(specifier))) throw err
    return nextResolve(specifier, { ...context, parentURL: LAB_PACKAGE })
  }
}
