/**
 * A full garbage collection, where one can be had: `gc` when the process was started with --expose-gc, else the flag set at run
 * time (what Node's own tests do). For figures that must not count garbage nobody collected yet.
 */
import v8 from 'node:v8'
import vm from 'node:vm'

/** @returns {(() => void)|null} a function that runs a full collection, or null where neither way works */
export function findCollector () {
  if (typeof globalThis.gc === 'function') return globalThis.gc
  try {
    v8.setFlagsFromString('--expose-gc')
    return vm.runInNewContext('gc')
  } catch {
    return null
  }
}
