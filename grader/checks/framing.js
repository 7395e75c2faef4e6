/**
 * Refusals that read the framing, not the body. A body comes with a
 * Content-Length or chunked without one, and a handler must answer both
 * (bodies.js `framed`). A refusal counts as a refusal of what the
 * body holds only when a good body sent the same way is answered: 411 to
 * every chunked body refuses a chunked zip bomb too, without looking at it.
 */
import { framed, FRAMING_LABELS, lookalikeStrings } from './bodies.js'
import { encodeBody, encodedHeaders } from './encodings.js'

export const FRAMING_REASON = 'a good body sent the same way was refused too: the refusal depends on how the body is framed, not on what it holds (a request body need not carry a Content-Length)'

/**
 * After a refusal sent `framing`'s way: a good body sent the same way, and
 * whether it was answered right.
 * @param {(body: object) => Promise<object>} post sends a body where the refused one went
 * @param {'length'|'chunked'} framing
 * @param {number} seed the run's
 * @param {import('./contract.js').Contract} contract how the answer is judged
 * @param {{ coding: string, mediaType: string }|null} [encoded] the good body in this coding and media type
 *   (a bomb sent in one, encodings.js), else gzip as the contract sends it
 * @returns {Promise<{ ok: boolean, status: number, why: string, figure: string }>} `figure` says what the good body got
 */
export async function goodBodyAnswered (post, framing, seed, contract, encoded = null) {
  const good = lookalikeStrings(seed)
  const res = await post(encoded === null
    ? framed(good.gzip, framing)
    : { ...framed(encodeBody(encoded.coding, good.json), framing), headers: encodedHeaders([encoded.coding], encoded.mediaType) })
  const verdict = contract.answer(res, good.reference)
  return { ok: verdict.ok, status: res.status, why: verdict.why, figure: `a good body sent the same way: ${verdict.why} (${FRAMING_LABELS[framing]})` }
}
