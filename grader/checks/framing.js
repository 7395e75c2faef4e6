/** A refusal counts only if a good body framed the same way is answered: a 411 to all chunked bodies refuses bombs unread. */
import { framed, FRAMING_LABELS, lookalikeStrings } from './bodies.js'
import { encodeBody, encodedHeaders } from './encodings.js'

export const FRAMING_REASON = 'a good body sent the same way was refused too: the refusal depends on how the body is framed, not on ' +
  'what it holds (a request body need not carry a Content-Length)'

/** After a refusal framed `framing`'s way: a good body sent the same way (in `encoded`'s coding if given), judged. */
export async function goodBodyAnswered (post, framing, seed, contract, encoded = null) {
  const good = lookalikeStrings(seed)
  const res = await post(encoded === null
    ? framed(good.gzip, framing)
    : { ...framed(encodeBody(encoded.coding, good.json), framing), headers: encodedHeaders([encoded.coding], encoded.mediaType) })
  const verdict = contract.answer(res, good.reference)
  return { ok: verdict.ok, status: res.status, why: verdict.why, figure: `a good body sent the same way: ${verdict.why} ` +
    `(${FRAMING_LABELS[framing]})` }
}
