/**
 * What a graded answer must be: the contract the checks judge answers by.
 * A handler keeps the lab's own (docs/lessons/grade.md); a service keeps
 * the summary contract when its answers carry the lab's summary fields, the
 * status contract when they carry none (a 2xx for a valid document, a 4xx
 * for a broken one, nothing counted), found by its answer to a small valid
 * document before the first check.
 */
import { framed, lookalikeStrings } from './bodies.js'
import { describeFailure, describeStatus, judgeAnswer, judgeRefusal, readFigures } from './reference.js'

/**
 * @typedef {{ name: 'handler'|'summary'|'status', describe: string,
 *   answered: (res: object) => boolean,
 *   answer: (res: object, reference: { items: number, idSum: string }) => { ok: boolean, why: string, idSumGiven: boolean },
 *   refusal: (res: object) => { ok: boolean, why: string } }} Contract
 *   `answered`: whether the endpoint took the body (a 200 for a handler, a 2xx for a service)
 */

/** @type {Contract} */
export const HANDLER_CONTRACT = Object.freeze({
  name: 'handler',
  describe: 'answers 200 with the summary fields, compared with the reference; refusals are a 4xx with a JSON body',
  answered: function answered200 (res) { return res.status === 200 },
  answer: judgeAnswer,
  refusal: judgeRefusal
})

/** @type {Contract} */
const SUMMARY_CONTRACT = Object.freeze({
  name: 'summary',
  describe: 'the answers carry the lab\'s summary fields (items, idSum): each 2xx answer is compared with the reference; refusals are a 4xx with a JSON body',
  answered: isSuccess,
  answer: function judgeSummary (res, reference) {
    // a 2xx is an answer: its figures are judged as a handler's 200 is
    return judgeAnswer(isSuccess(res) ? { ...res, status: 200 } : res, reference)
  },
  refusal: judgeRefusal
})

/** @type {Contract} */
const STATUS_CONTRACT = Object.freeze({
  name: 'status',
  describe: 'the answers carry no summary fields: a valid document must get a 2xx and a broken one a 4xx; what is in the body is not compared',
  answered: isSuccess,
  answer: function judgeStatus (res) {
    if (isSuccess(res)) return { ok: true, why: `${res.status} accepted`, idSumGiven: false }
    return { ok: false, why: describeFailure(res), idSumGiven: false }
  },
  refusal: function judgeStatusRefusal (res) {
    if (res.status >= 400 && res.status < 500) return { ok: true, why: describeStatus(res) }
    if (isSuccess(res)) return { ok: false, why: `${res.status}: accepted` }
    return { ok: false, why: describeFailure(res) }
  }
})

function isSuccess (res) {
  return res.status >= 200 && res.status < 300
}

/**
 * Which contract a service keeps: a small valid document is sent (with its
 * Content-Length); a 2xx JSON answer that carries `items` is the summary
 * contract, anything else the status contract. `probe` says what came back,
 * so the card can say why (a 401 or a 415 usually means a header is missing:
 * --header).
 * @param {(body: object) => Promise<object>} post sends a body to the service
 * @param {number} seed the run's
 * @returns {Promise<{ contract: Contract, probe: { status: number, why: string } }>}
 */
export async function detectContract (post, seed) {
  const doc = lookalikeStrings(seed)
  const res = await post(framed(doc.gzip, 'length'))
  const figures = res.json === null ? { problem: 'not JSON' } : readFigures(res.json)
  const summary = isSuccess(res) && !('problem' in figures)
  const why = isSuccess(res) ? `${res.status}${summary ? ` with items ${figures.items}` : ' with no summary fields'}` : describeFailure(res)
  return { contract: summary ? SUMMARY_CONTRACT : STATUS_CONTRACT, probe: { status: res.status, why } }
}
