/**
 * Correctness: the same `items` (and `idSum`, when the handler gives it) as
 * the reference, on generated documents and on the tricky ones of
 * grader/bodies.js, and a 4xx for a record that does not parse.
 */
import {
  brokenRecord, escapes, everyTrap, generatedDocument, layout, lookalikeStrings, multiByte, multiMember, stored
} from '../bodies.js'
import { judgeAnswer, judgeRefusal } from '../reference.js'

const AREA = 'correctness'
const MATCH = 'every answer matches the reference'

/** Tiny writes: 1 to 7 bytes each, a macrotask apart. */
const TINY = Object.freeze({ min: 1, max: 7 })

export const checks = Object.freeze([
  {
    area: AREA,
    name: 'generated documents',
    meaning: 'documents from the lab\'s generator (0, 1,000 and 20,000 records) counted as the reference counts them',
    limit: MATCH,
    hint: 'Count every element of the top-level "items" array, and add up each record\'s top-level integer "id" exactly (a BigInt, answered as a string).',
    trips: true,
    run: async function generatedDocuments (ctx) {
      const cases = []
      for (const [size, seed] of [[0, 1], [1000, 1], [20000, 7]]) {
        const doc = await generatedDocument({ size, seed, dir: ctx.inputDir })
        cases.push({ label: `${size} records`, body: { file: doc.file }, reference: doc.reference })
      }
      return compareAll(ctx, cases)
    }
  },
  {
    area: AREA,
    name: 'strings that look like records',
    meaning: 'strings holding "id":, },{ and ]}, and objects with ids nested inside records, are not records',
    limit: MATCH,
    hint: 'Strings can hold anything: find records by their structure (track strings and nesting depth, then JSON.parse each record), never by searching the text for "id": or },{.',
    trips: true,
    run: function lookalikes (ctx) {
      const doc = lookalikeStrings()
      return compareAll(ctx, [{ label: doc.name, body: { buffer: doc.gzip }, reference: doc.reference }])
    }
  },
  {
    area: AREA,
    name: 'escapes',
    meaning: 'escaped quotes and backslashes, a string ending in a backslash, \\u escapes of quotes and braces, a key spelled "i\\u0064"',
    limit: MATCH,
    hint: 'Inside a string a backslash escapes the next character: \\\\" ends the string, \\" does not. Let JSON.parse read the escapes ("i\\u0064" is the key id).',
    trips: true,
    run: function escaped (ctx) {
      const doc = escapes()
      return compareAll(ctx, [{ label: doc.name, body: { buffer: doc.gzip }, reference: doc.reference }])
    }
  },
  {
    area: AREA,
    name: 'multi-byte characters split across chunks',
    meaning: 'UTF-8 characters of 2, 3 and 4 bytes straddling the 16 KiB chunks gunzip hands out, and in keys',
    limit: MATCH,
    hint: 'Never decode a chunk on its own: a character can straddle two chunks. Keep Buffers and decode a whole record (Buffer.concat, then toString), or use a StringDecoder.',
    trips: true,
    run: function multiByteCharacters (ctx) {
      const doc = multiByte()
      return compareAll(ctx, [{ label: doc.name, body: { buffer: doc.gzip }, reference: doc.reference }])
    }
  },
  {
    area: AREA,
    name: 'multi-member gzip',
    meaning: 'a body of several gzip members back to back, cut inside records and characters',
    limit: MATCH,
    hint: 'A gzip body may be several members one after the other: zlib.createGunzip() reads them all, as gunzip(1) does; stop at the first and you miss records.',
    trips: true,
    run: function multiMemberGzip (ctx) {
      const docs = [multiMember(lookalikeStrings(), 3), multiMember(multiByte(), 5)]
      return compareAll(ctx, docs.map(function asCase (doc) { return { label: doc.name, body: { buffer: doc.gzip }, reference: doc.reference } }))
    }
  },
  {
    area: AREA,
    name: 'bodies sent in tiny chunks',
    meaning: 'every trap above in one stored (level 0) gzip body, sent 1 to 7 bytes at a time: chunks end inside tokens, numbers and characters',
    limit: MATCH,
    hint: 'A chunk may end anywhere, inside a key, a number or a character: carry what is unfinished over to the next chunk.',
    trips: true,
    run: function tinyChunks (ctx) {
      const doc = stored(everyTrap())
      return compareAll(ctx, [{ label: 'every trap, 1 to 7 bytes per write', body: { buffer: doc.gzip, writes: TINY }, reference: doc.reference }])
    }
  },
  {
    area: AREA,
    name: 'layout: whitespace, other keys and arrays around items',
    meaning: 'pretty-printed with tabs and CRLF, an "items" array inside "meta" before the real one, arrays of ids under other keys',
    limit: MATCH,
    hint: 'Only the elements of the top-level "items" array are records: track the nesting depth and the key at depth 1, and allow whitespace between any two tokens.',
    trips: true,
    run: function layoutCheck (ctx) {
      const doc = layout()
      return compareAll(ctx, [{ label: doc.name, body: { buffer: doc.gzip }, reference: doc.reference }])
    }
  },
  {
    area: AREA,
    name: 'a record that does not parse',
    meaning: 'good gzip around JSON with a broken record must be refused with a 4xx JSON answer, not counted',
    limit: '4xx with a JSON body',
    hint: 'Parse every record (JSON.parse) and answer 400 with a JSON error when one does not parse: a count of text that is not JSON is not an answer.',
    trips: true,
    run: async function brokenRecordCheck (ctx) {
      const doc = brokenRecord()
      const res = await ctx.post('student', { buffer: doc.gzip })
      if (res.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${seconds(res.ms)} s` }
      const verdict = judgeRefusal(res)
      return { pass: verdict.ok, figure: verdict.why, reason: verdict.ok ? null : await ctx.explain(res) }
    }
  }
])

/**
 * Send each case and judge its answer: all must match. A timeout stops at once
 * (the handler hangs: the runner starts the lab again).
 * @param {object} ctx
 * @param {Array<{ label: string, body: object, reference: { items: number, idSum: string } }>} cases
 */
async function compareAll (ctx, cases) {
  let ok = 0
  let firstMiss = null
  let idSumGiven = false
  const answers = []
  for (const c of cases) {
    const res = await ctx.post('student', c.body)
    if (res.error === 'timeout') {
      return { pass: false, hung: true, figure: `no answer within ${seconds(res.ms)} s (${c.label})`, details: { answers } }
    }
    const verdict = judgeAnswer(res, c.reference)
    answers.push({ label: c.label, status: res.status, ok: verdict.ok, why: verdict.why, ms: res.ms })
    if (verdict.idSumGiven) idSumGiven = true
    if (verdict.ok) ok++
    else if (firstMiss === null) firstMiss = { label: c.label, why: verdict.why, res }
  }
  const count = `${ok}/${cases.length} ${cases.length === 1 ? 'answer matches' : 'answers match'}`
  if (firstMiss === null) {
    return { pass: true, figure: idSumGiven ? count : `${count} (items only: no idSum given)`, details: { answers } }
  }
  return {
    pass: false,
    figure: `${count}: ${firstMiss.why}${cases.length > 1 ? ` (${firstMiss.label})` : ''}`,
    reason: await ctx.explain(firstMiss.res),
    details: { answers }
  }
}

function seconds (ms) {
  return Math.round(ms / 1000)
}
