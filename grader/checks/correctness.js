/** Correctness: the reference's `items` (and `idSum`) on generated and tricky documents, a 4xx for a broken record; both framings. */
import {
  brokenRecord, escapes, everyTrap, FRAMINGS, FRAMING_LABELS, framed, framedFile, generatedDocument, generatedSizes,
  layout, lookalikeStrings, multiByte, multiMember, stored
} from './bodies.js'
import { FRAMING_REASON, goodBodyAnswered } from './framing.js'

const AREA = 'correctness'
const MATCH = 'every answer matches the reference'
/** The limit under the status contract (contract.js): the answers carry nothing to compare. */
const STATUS_LIMIT = 'every valid document answered 2xx (status contract)'

/** Tiny writes: 1 to 7 bytes each, a macrotask apart. */
const TINY = Object.freeze({ min: 1, max: 7 })

export const checks = Object.freeze([
  {
    area: AREA,
    name: 'generated documents',
    meaning: 'documents from the lab\'s generator (none, about 1,000 and about 20,000 records, drawn from the run\'s seed) counted as ' +
      'the reference counts them',
    limit: MATCH,
    hint: 'Count every element of the top-level "items" array, and add up each record\'s top-level integer "id" ' +
      'exactly (a BigInt, answered as a string).',
    trips: true,
    run: async function generatedDocuments (ctx) {
      const cases = []
      for (const size of generatedSizes(ctx.seed)) {
        const doc = await generatedDocument({ size, seed: ctx.seed, dir: ctx.inputDir })
        cases.push({ label: `${size} records`, file: doc.file, reference: doc.reference })
      }
      return compareAll(ctx, cases)
    }
  },
  trapCheck({
    name: 'strings that look like records',
    meaning: 'strings holding "id":, },{ and ]}, and objects with ids nested inside records, are not records',
    hint: 'Strings can hold anything: find records by their structure (track strings and nesting depth, then JSON.parse each record), ' +
      'never by searching the text for "id": or },{.'
  }, lookalikeStrings),
  trapCheck({
    name: 'escapes',
    meaning: 'escaped quotes and backslashes, a string ending in a backslash, \\u escapes of quotes and braces, a key spelled "i\\u0064"',
    hint: 'Inside a string a backslash escapes the next character: \\\\" ends the string, \\" does not. Let JSON.parse read the escapes ' +
      '("i\\u0064" is the key id).'
  }, escapes),
  trapCheck({
    name: 'multi-byte characters split across chunks',
    meaning: 'UTF-8 characters of 2, 3 and 4 bytes straddling the 16 KiB chunks gunzip hands out, and in keys',
    hint: 'Never decode a chunk on its own: a character can straddle two chunks. Keep Buffers and decode a whole record (Buffer.concat, ' +
      'then toString), or use a StringDecoder.'
  }, multiByte),
  {
    area: AREA,
    name: 'multi-member gzip',
    meaning: 'a body of several gzip members back to back, cut inside records and characters',
    limit: MATCH,
    hint: 'A gzip body may be several members one after the other: zlib.createGunzip() reads them all, as gunzip(1) does; stop at the ' +
      'first and you miss records.',
    trips: true,
    run: function multiMemberGzip (ctx) {
      const docs = [multiMember(lookalikeStrings(ctx.seed), 3), multiMember(multiByte(ctx.seed), 5)]
      return compareAll(ctx, docs.map(function asCase (doc) { return { label: doc.name, buffer: doc.gzip, reference: doc.reference } }))
    }
  },
  {
    area: AREA,
    name: 'bodies sent in tiny chunks',
    meaning: 'every trap above in one stored (level 0) gzip body, sent 1 to 7 bytes at a time (raw writes, and chunks of a chunked ' +
      'body): chunks end inside tokens, numbers and characters',
    limit: MATCH,
    hint: 'A chunk may end anywhere, inside a key, a number or a character: carry what is unfinished over to the next chunk.',
    trips: true,
    run: function tinyChunks (ctx) {
      const doc = stored(everyTrap(ctx.seed))
      return compareAll(ctx, [{ label: 'every trap, 1 to 7 bytes per write', buffer: doc.gzip, writes: TINY, reference: doc.reference }])
    }
  },
  trapCheck({
    name: 'layout: whitespace, other keys and arrays around items',
    meaning: 'pretty-printed with tabs and CRLF, an "items" array inside "meta" before the real one, arrays of ids under other keys',
    hint: 'Only the elements of the top-level "items" array are records: track the nesting depth and the key at depth 1, and allow ' +
      'whitespace between any two tokens.'
  }, layout),
  {
    area: AREA,
    name: 'a record that does not parse',
    meaning: 'good gzip around JSON with a broken record (which one, and how, drawn from the seed) must be refused with a 4xx JSON ' +
      'answer, not counted, with and without Content-Length',
    limit: '4xx with a JSON body, each way, and a good body sent the same way answered',
    hint: 'Parse every record (JSON.parse) and answer 400 with a JSON error when one does not parse: a count of ' +
      'text that is not JSON is not an answer.',
    trips: true,
    run: async function brokenRecordCheck (ctx) {
      const doc = brokenRecord(ctx.seed)
      const answers = []
      for (const framing of FRAMINGS) {
        const res = await ctx.post('student', framed(doc.gzip, framing))
        const way = FRAMING_LABELS[framing]
        const hung = `no answer within ${seconds(res.ms)} s (${way})`
        if (res.error === 'timeout') return { pass: false, hung: true, figure: hung, details: { answers } }
        const verdict = ctx.contract.refusal(res)
        answers.push({ framing, status: res.status, ok: verdict.ok, why: verdict.why })
        if (!verdict.ok) return { pass: false, figure: `${verdict.why} (${way})`, reason: await ctx.explain(res), details: { answers } }
        const control = await goodBodyAnswered(function postToLab (body) { return ctx.post('student', body) }, framing, ctx.seed,
          ctx.contract)
        const figure = `${verdict.why}, and ${control.figure}`
        if (!control.ok) return { pass: false, figure, reason: FRAMING_REASON, details: { answers } }
      }
      return { pass: true, figure: sameOrEach(answers), details: { answers } }
    }
  }
])

/** A check of one tricky document of bodies.js, `make(seed)`, counted as the reference counts it. */
function trapCheck ({ name, meaning, hint }, make) {
  return {
    area: AREA,
    name,
    meaning,
    limit: MATCH,
    hint,
    trips: true,
    run: function oneDocument (ctx) {
      const doc = make(ctx.seed)
      return compareAll(ctx, [{ label: doc.name, buffer: doc.gzip, reference: doc.reference }])
    }
  }
}

/** Send each case both ways and judge each answer; a timeout stops at once (the runner starts the lab again). */
async function compareAll (ctx, cases) {
  let ok = 0
  let firstMiss = null
  let idSumGiven = false
  const answers = []
  for (const c of cases) {
    for (const framing of FRAMINGS) {
      const label = `${c.label}, ${FRAMING_LABELS[framing]}`
      const body = c.file === undefined ? framed(c.buffer, framing, c.writes ?? null) : framedFile(c.file, framing)
      const res = await ctx.post('student', body)
      if (res.error === 'timeout') {
        return { pass: false, hung: true, figure: `no answer within ${seconds(res.ms)} s (${label})`, details: { answers } }
      }
      const verdict = ctx.contract.answer(res, c.reference)
      answers.push({ label: c.label, framing, status: res.status, ok: verdict.ok, why: verdict.why, ms: res.ms })
      if (verdict.idSumGiven) idSumGiven = true
      if (verdict.ok) ok++
      else if (firstMiss === null) firstMiss = { label: c.label, framing, why: verdict.why, res }
    }
  }
  const sent = answers.length
  const count = ctx.contract.name === 'status' ? `${ok}/${sent} answered 2xx` : `${ok}/${sent} answers match`
  if (firstMiss === null) {
    if (ctx.contract.name === 'status') {
      return { pass: true, figure: `${count}, with and without Content-Length (status contract: nothing counted to ` +
        `compare)`, limit: STATUS_LIMIT, details: { answers } }
    }
    const ways = `${count}, with and without Content-Length`
    return { pass: true, figure: idSumGiven ? ways : `${ways} (items only: no idSum given)`, details: { answers } }
  }
  return {
    pass: false,
    ...(ctx.contract.name === 'status' ? { limit: STATUS_LIMIT } : {}),
    figure: `${count}: ${firstMiss.why} (${firstMiss.label}, ${FRAMING_LABELS[firstMiss.framing]})`,
    reason: byFraming(answers, firstMiss) ?? await ctx.explain(firstMiss.res),
    details: { answers }
  }
}

/** The reason when only the Content-Length body was answered (the handler reads the framing), else null. */
function byFraming (answers, miss) {
  if (miss.framing !== 'chunked') return null
  const withLength = answers.find(function sameBody (a) { return a.label === miss.label && a.framing === 'length' })
  if (withLength?.ok !== true) return null
  return `answered with a Content-Length, not chunked (${miss.why}): a request body need not say its length (Transfer-Encoding: ` +
    `chunked); read the stream to its end whatever the framing, as pipeline(req, …) does`
}

/** "400 json.invalid, with and without Content-Length", or each framing's refusal when they differ. */
function sameOrEach (answers) {
  const whys = new Set(answers.map(function why (a) { return a.why }))
  if (whys.size === 1) return `${answers[0].why}, with and without Content-Length`
  return answers.map(function each (a) { return `${a.why} (${FRAMING_LABELS[a.framing]})` }).join(', ')
}

function seconds (ms) {
  return Math.round(ms / 1000)
}
