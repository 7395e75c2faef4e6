/** The contract answers are judged by: the lab's for a handler (docs/lessons/grade.md); summary or status for a service. */
import { framed, lookalikeStrings } from './bodies.js'
import { describeFailure, describeStatus, judgeAnswer, judgeRefusal, readFigures } from './reference.js'

/**
 * @typedef {{ name: 'handler'|'summary'|'status', describe: string, answered: (res: object) => boolean,
 *   answer: (res: object, reference: object) => { ok: boolean, why: string, idSumGiven: boolean },
 *   refusal: (res: object) => { ok: boolean, why: string } }} Contract
 */

export const HANDLER_CONTRACT = Object.freeze({
  name: 'handler',
  describe: 'answers 200 with the summary fields, compared with the reference; refusals are a 4xx with a JSON body',
  answered: function answered200 (res) { return res.status === 200 },
  answer: judgeAnswer,
  refusal: judgeRefusal
})

const SUMMARY_CONTRACT = Object.freeze({
  name: 'summary',
  describe: 'the answers carry the lab\'s summary fields (items, idSum): each 2xx answer is compared with the ' +
    'reference; refusals are a 4xx with a JSON body',
  answered: isSuccess,
  answer: function judgeSummary (res, reference) {
    // a 2xx is an answer: its figures are judged as a handler's 200 is
    return judgeAnswer(isSuccess(res) ? { ...res, status: 200 } : res, reference)
  },
  refusal: judgeRefusal
})

const STATUS_CONTRACT = Object.freeze({
  name: 'status',
  describe: 'the answers carry no summary fields: a valid document must get a 2xx and a broken one a 4xx; what is ' +
    'in the body is not compared',
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

/** A service keeps the summary contract when a small document's 2xx JSON answer has `items`, else the status one. */
export async function detectContract (post, seed) {
  const doc = lookalikeStrings(seed)
  const res = await post(framed(doc.gzip, 'length'))
  const figures = res.json === null ? { problem: 'not JSON' } : readFigures(res.json)
  const summary = isSuccess(res) && !('problem' in figures)
  const why = isSuccess(res) ? `${res.status}${summary ? ` with items ${figures.items}` : ' with no summary fields'}` : describeFailure(res)
  return { contract: summary ? SUMMARY_CONTRACT : STATUS_CONTRACT, probe: { status: res.status, why } }
}
