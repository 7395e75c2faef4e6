/** The reference answer, computed apart from the lab's routes: `items` and the exact `idSum` of top-level integer ids. */

export function referenceOf (json) {
  const doc = JSON.parse(Buffer.isBuffer(json) ? json.toString('utf8') : json)
  if (doc === null || typeof doc !== 'object' || !Array.isArray(doc.items)) throw new TypeError('not an {"items":[...]} document')
  let idSum = 0n
  for (const record of doc.items) {
    const isRecord = record !== null && typeof record === 'object' && !Array.isArray(record)
    if (isRecord && Number.isSafeInteger(record.id)) idSum += BigInt(record.id)
  }
  return { items: doc.items.length, idSum: idSum.toString() }
}

/** The reference of a generated document (lib/generate/items.js): ids run from 1 to `items`. */
export function referenceOfGenerated (items) {
  const n = BigInt(items)
  return { items, idSum: (n * (n + 1n) / 2n).toString() }
}

/** The figures of a handler's JSON answer: `{ items, idSum|null }` or `{ problem }`. */
export function readFigures (json) {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return { problem: 'the answer is not a JSON object' }
  const source = Object.hasOwn(json, 'items') ? json : json.summary
  if (source === null || typeof source !== 'object' || !Object.hasOwn(source, 'items')) {
    return { problem: `no "items" in the answer (keys: ${Object.keys(json).slice(0, 6).join(', ') || 'none'})` }
  }
  if (!Number.isSafeInteger(source.items) || source.items < 0) {
    return { problem: `"items" must be a whole number, got ${JSON.stringify(source.items)?.slice(0, 40)}` }
  }
  let idSum = null
  if (source.idSum !== undefined && source.idSum !== null) {
    if (typeof source.idSum === 'string' && /^-?\d+$/.test(source.idSum)) idSum = BigInt(source.idSum).toString()
    else if (Number.isSafeInteger(source.idSum)) idSum = String(source.idSum)
    else return { problem: `"idSum" must be a decimal string, got ${JSON.stringify(source.idSum)?.slice(0, 40)}` }
  }
  return { items: source.items, idSum }
}

export function judgeAnswer (res, reference) {
  if (res.status !== 200) return { ok: false, why: describeFailure(res), idSumGiven: false }
  const figures = readFigures(res.json)
  const notJson = `200 but not JSON: ${JSON.stringify(res.text.slice(0, 60))}`
  if ('problem' in figures) return { ok: false, why: res.json === null ? notJson : figures.problem, idSumGiven: false }
  if (figures.items !== reference.items) {
    return { ok: false, why: `items ${figures.items}, expected ${reference.items}`, idSumGiven: figures.idSum !== null }
  }
  if (figures.idSum !== null && figures.idSum !== reference.idSum) {
    return { ok: false, why: `idSum ${figures.idSum}, expected ${reference.idSum}`, idSumGiven: true }
  }
  const idSum = figures.idSum === null ? '' : `, idSum ${figures.idSum}`
  return { ok: true, why: `items ${figures.items}${idSum}`, idSumGiven: figures.idSum !== null }
}

/** Whether a refusal is what the contract asks: a 4xx with a JSON body. */
export function judgeRefusal (res) {
  if (res.status >= 400 && res.status < 500) {
    if (res.json === null) return { ok: false, why: `${res.status} but not JSON: ${JSON.stringify(res.text.slice(0, 60))}` }
    return { ok: true, why: describeStatus(res) }
  }
  if (res.status === 200) {
    const figures = readFigures(res.json)
    return { ok: false, why: `200: accepted${'items' in figures ? ` (items ${figures.items})` : ''}` }
  }
  return { ok: false, why: describeFailure(res) }
}

/** "413 inflated.too.large", or the status alone. */
export function describeStatus (res) {
  const type = res.json?.error?.type ?? res.json?.type ?? res.json?.error
  return typeof type === 'string' ? `${res.status} ${type.slice(0, 60)}` : String(res.status)
}

/** What went wrong with an answer that is not a 200: no answer, a cut connection, a 5xx. */
export function describeFailure (res) {
  if (res.status === 0) {
    if (res.error === 'timeout') return `no answer within ${(res.ms / 1000).toFixed(0)} s`
    return `no answer: the connection was cut (${res.error})`
  }
  return describeStatus(res)
}
