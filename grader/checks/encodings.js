/** The content codings an endpoint takes, probed with a small document in each; safety.js bombs each coding taken. */
import zlib from 'node:zlib'
import { framed, lookalikeStrings } from './bodies.js'

/** What each coding's small body is made with; zstd only where this Node's zlib has it. */
const ENCODERS = Object.freeze({
  gzip: function gzipBody (bytes) { return zlib.gzipSync(bytes) },
  deflate: function deflateBody (bytes) { return zlib.deflateSync(bytes) },
  br: function brotliBody (bytes) { return zlib.brotliCompressSync(bytes) },
  zstd: typeof zlib.zstdCompressSync === 'function' ? function zstdBody (bytes) { return zlib.zstdCompressSync(bytes) } : null,
  identity: function identityBody (bytes) { return bytes }
})

/** The codings the probe tries, in the order the card lists them. */
export const PROBE_CODINGS = Object.freeze(['gzip', 'deflate', 'br', 'zstd', 'identity'])

/** The codings a bomb can ride: all but identity, which inflates nothing. */
export const BOMB_CODINGS = Object.freeze(PROBE_CODINGS.filter(function compresses (coding) { return coding !== 'identity' }))

/** The media types tried in turn when none is asked for: JSON as services take it, then the lab's contract. */
const MEDIA_TYPES = Object.freeze(['application/json', 'application/octet-stream'])

export function encodeBody (coding, bytes) {
  return ENCODERS[coding](bytes)
}

/** The headers of a body of `codings` (in the order applied; none for identity) in `mediaType`. */
export function encodedHeaders (codings, mediaType) {
  const named = codings.filter(function notIdentity (c) { return c !== 'identity' })
  return named.length === 0 ? { 'content-type': mediaType } : { 'content-type': mediaType, 'content-encoding': named.join(', ') }
}

/**
 * @typedef {{ mediaType: string, asked: boolean, accepted: string[], refused: string[],
 *   other: Array<{ coding: string, status: number, taken: boolean, why: string }>, untried: Array<{ coding: string, why: string }>,
 *   answers: Array<{ mediaType: string, coding: string, status: number, why: string }> }} Encodings
 *   `other`: a 5xx, no answer, or `taken` (answered as valid, but wrong)
 */

/** The codings to bomb: those accepted, and those taken with a wrong answer (the body got in). */
export function codingsTaken (encodings) {
  if (encodings === null) return []
  const got = encodings.other.filter(function got (o) { return o.taken }).map(function coding (o) { return o.coding })
  const taken = new Set([...encodings.accepted, ...got])
  return BOMB_CODINGS.filter(function compresses (coding) { return taken.has(coding) })
}

async function nothingSeen () { return null }

/** Send the small document in each coding, in the media type asked for, else the first of JSON and octet-stream taking any. */
export async function probeEncodings ({ post, seed, contract, mediaType = null, afterEach = nothingSeen }) {
  const doc = lookalikeStrings(seed)
  const answers = []
  const candidates = mediaType === null ? MEDIA_TYPES : [mediaType]
  let chosen = null
  for (const type of candidates) {
    const found = await probeIn(type, { post, doc, contract, afterEach })
    answers.push(...found.answers)
    chosen ??= found
    if (found.accepted.length > chosen.accepted.length) chosen = found
    // another media type only where this one was refused (a 415, say), not where bodies died or hung
    if (found.accepted.length > 0 || found.refused.length === 0 || found.stopped) break
  }
  const { accepted, refused, other, untried } = chosen
  return { mediaType: chosen.mediaType, asked: mediaType !== null, accepted, refused, other, untried, answers }
}

/** Every coding in one media type; after an answer that never came, the rest are not tried (it answers nothing). */
async function probeIn (mediaType, { post, doc, contract, afterEach }) {
  const found = { mediaType, accepted: [], refused: [], other: [], untried: [], answers: [], stopped: false }
  for (const coding of PROBE_CODINGS) {
    if (ENCODERS[coding] === null) {
      found.untried.push({ coding, why: `Node ${process.versions.node} has no ${coding} in zlib` })
      continue
    }
    if (found.stopped) {
      found.untried.push({ coding, why: 'the endpoint answered nothing before it' })
      continue
    }
    const res = await post({ ...framed(encodeBody(coding, doc.json), 'length'), headers: encodedHeaders([coding], mediaType) })
    // what the runner saw beside the answer: the target died on it, say
    const seen = await afterEach(res)
    const answer = contract.answer(res, doc.reference)
    const why = seen ?? answer.why
    if (answer.ok) found.accepted.push(coding)
    else if (res.status >= 400 && res.status < 500) found.refused.push(coding)
    else found.other.push({ coding, status: res.status, taken: contract.answered(res), why })
    found.answers.push({ mediaType, coding, status: res.status, why })
    if (res.status === 0 && res.error === 'timeout') found.stopped = true
  }
  return found
}

/** The card's line: "as application/json: accepted gzip, br; refused deflate, identity; zstd not tried (…)". */
export function encodingsLine (encodings) {
  const parts = [`accepted ${encodings.accepted.length > 0 ? encodings.accepted.join(', ') : 'none'}`]
  if (encodings.refused.length > 0) parts.push(`refused ${encodings.refused.join(', ')}`)
  for (const { coding, why } of encodings.other) parts.push(`${coding}: ${why}`)
  for (const { coding, why } of encodings.untried) parts.push(`${coding} not tried (${why})`)
  return `as ${encodings.mediaType}${encodings.asked ? '' : ' (found)'}: ${parts.join('; ')}`
}
