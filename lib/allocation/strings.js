/**
 * String bytes by site, where V8's heap cannot be sampled (a process under Node's permission model has no inspector): the calls
 * that make a string of a body's bytes, or parse one whole, are wrapped while a recorder listens, and sampled by bytes as
 * buffers.js samples Buffers, one byte a character (README.md, "strings.js", says which calls count).
 */
import { Buffer } from 'node:buffer'
import { WrappingRecorder } from './site-table.js'
import { anyPrefers, captureCallSites, siteOfCallSites } from './frames.js'

/** What is wrapped: an owner, a method's name, what its call is weighed by, and its kind. */
const TARGETS = Object.freeze([
  Object.freeze({ owner: Buffer.prototype, name: 'toString', weigh: resultLength, kindOf: made }),
  Object.freeze({ owner: TextDecoder.prototype, name: 'decode', weigh: resultLength, kindOf: made }),
  Object.freeze({ owner: JSON, name: 'parse', weigh: textLength, kindOf: parsedOrMade })
])

/** the recorders of this thread, and the wrapped calls' originals while wrapped */
const recorders = new Set()
let originals = null
/** Inside a wrapped call: the calls it makes are part of it (JSON.parse of a Buffer calls toString). */
let inside = false

/** Samples this thread's strings made from bytes, by site, from `start()` to `stop()`; what they hold is not known. */
export class StringRecorder extends WrappingRecorder {
  constructor (intervalBytes, prefer = null) {
    super(intervalBytes, prefer, { kind: 'string', held: false, recorders, wrap: wrapTargets, unwrap: unwrapTargets })
  }
}

/** Whether this thread's string makers are wrapped now. */
export function stringsWrapped () {
  return originals !== null
}

function wrapTargets () {
  originals = TARGETS.map(function wrap ({ owner, name, weigh, kindOf }) {
    const original = owner[name]
    owner[name] = sampledCall(original, weigh, kindOf)
    return { owner, name, original }
  })
}

function unwrapTargets () {
  for (const { owner, name, original } of originals) owner[name] = original
  originals = null
}

function sampledCall (original, weigh, kindOf) {
  return function sampledStringCall () {
    if (inside) return original.apply(this, arguments)
    inside = true
    let result
    try {
      result = original.apply(this, arguments)
    } finally {
      inside = false
    }
    noteString(weigh(result, arguments), kindOf(arguments), sampledStringCall)
    return result
  }
}

function resultLength (result) {
  return typeof result === 'string' ? result.length : 0
}

function made () {
  return 'string'
}

/** JSON.parse of a string reads a text made elsewhere; of bytes, it makes one. */
function parsedOrMade (args) {
  return typeof args[0] === 'string' ? 'parsed' : 'string'
}

function textLength (result, args) {
  const text = args[0]
  return typeof text === 'string' ? text.length : text?.byteLength ?? 0
}

function noteString (bytes, kind, wrapper) {
  if (!(bytes > 0)) return
  let callSites = null
  for (const recorder of recorders) {
    if (!recorder.count(bytes)) continue
    callSites ??= captureCallSites(wrapper, anyPrefers(recorders))
    recorder.record(siteOfCallSites(callSites, recorder.prefer), bytes, null, kind)
  }
}
