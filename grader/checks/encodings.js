/**
 * The content codings a graded endpoint takes. Before the safety checks, a
 * small valid document goes in each coding Node can make (gzip, deflate, br,
 * zstd where zlib has it) and as identity JSON, in one media type: the one
 * asked for (--content-type, or a Content-Type given with --header), else
 * application/json, else the octet-stream the lab's contract sends. A 2xx
 * with the right answer is accepted, a 4xx refused; the card lists both,
 * and the safety area bombs each coding it takes (safety.js). A coding it
 * refuses is no failure: the bomb never gets in.
 */
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

/**
 * `bytes` in `coding`.
 * @param {string} coding one of PROBE_CODINGS that this Node makes
 * @param {Buffer} bytes
 * @returns {Buffer}
 */
export function encodeBody (coding, bytes) {
  return ENCODERS[coding](bytes)
}

/**
 * The headers of a body of `codings` (in the order applied; none for identity) in `mediaType`.
 * @param {string[]} codings
 * @param {string} mediaType
 * @returns {Record<string, string>}
 */
export function encodedHeaders (codings, mediaType) {
  const named = codings.filter(function notIdentity (c) { return c !== 'identity' })
  return named.length === 0 ? { 'content-type': mediaType } : { 'content-type': mediaType, 'content-encoding': named.join(', ') }
}

/**
 * @typedef {{ mediaType: string, asked: boolean, accepted: string[], refused: string[],
 *   other: Array<{ coding: string, status: number, taken: boolean, why: string }>, untried: Array<{ coding: string, why: string }>,
 *   answers: Array<{ mediaType: string, coding: string, status: number, why: string }> }} Encodings
 *   `asked`: the media type was given (--content-type, --header), not found; `other`: neither
 *   accepted nor refused (a 5xx, no answer, or `taken`: answered as a valid body is, but wrong);
 *   `untried`: not sent, and why
 */

/**
 * The codings to bomb: those accepted, and those taken with a wrong answer (the body got in).
 * @param {Encodings|null} encodings
 * @returns {string[]}
 */
export function codingsTaken (encodings) {
  if (encodings === null) return []
  const taken = new Set([...encodings.accepted, ...encodings.other.filter(function got (o) { return o.taken }).map(function coding (o) { return o.coding })])
  return BOMB_CODINGS.filter(function compresses (coding) { return taken.has(coding) })
}

/**
 * Send the small document in each coding, in the media type asked for or, when none is, in
 * the first of application/json and application/octet-stream that it accepts any coding in.
 * @param {{ post: (body: object) => Promise<object>, seed: number, contract: import('./contract.js').Contract,
 *   mediaType?: string|null, afterEach?: (res: object) => Promise<string|null|undefined> }} probe
 *   `post` sends a body to the endpoint; `afterEach` runs after every answer (the runner starts a
 *   target that died again) and may say what happened instead of the answer (its death)
 * @returns {Promise<Encodings>}
 */
export async function probeEncodings ({ post, seed, contract, mediaType = null, afterEach = async function nothingSeen () { return null } }) {
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
  return { mediaType: chosen.mediaType, asked: mediaType !== null, accepted: chosen.accepted, refused: chosen.refused, other: chosen.other, untried: chosen.untried, answers }
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

/**
 * The card's line: "as application/json: accepted gzip, br; refused deflate, identity; zstd not tried (…)".
 * @param {Encodings} encodings
 * @returns {string}
 */
export function encodingsLine (encodings) {
  const parts = [`accepted ${encodings.accepted.length > 0 ? encodings.accepted.join(', ') : 'none'}`]
  if (encodings.refused.length > 0) parts.push(`refused ${encodings.refused.join(', ')}`)
  for (const { coding, why } of encodings.other) parts.push(`${coding}: ${why}`)
  for (const { coding, why } of encodings.untried) parts.push(`${coding} not tried (${why})`)
  return `as ${encodings.mediaType}${encodings.asked ? '' : ' (found)'}: ${parts.join('; ')}`
}
