/**
 * 9. Decoder windows (docs/hostile.md): many bodies at once whose decoders hold the widest window the
 * lab lets a header ask for, memory the inflated-bytes and ratio limits never see and the decoder
 * budget does (lib/ingest/decoder-memory.js). Loops bounded in count and time, requests to 127.0.0.1.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { text } from 'node:stream/consumers'
import { createBomb, prepareBomb } from '../../lib/generate/bombs.js'
import { createJsonStream } from '../../lib/generate/items.js'
import { createTally, finishTally, recordsOf, tallyRecords } from '../../lib/parse/tally.js'
import { formatBytes } from '../../lib/util/units.js'

const { BROTLI_PARAM_LGWIN, BROTLI_PARAM_QUALITY, BROTLI_PARAM_SIZE_HINT } = zlib.constants

/** The codecs whose decoders hold a window a header chooses, each compressed with the widest the lab decodes. */
const WIDE = Object.freeze({
  br: function brotliWide (doc) {
    return zlib.brotliCompressSync(doc, {
      params: { [BROTLI_PARAM_LGWIN]: 24, [BROTLI_PARAM_QUALITY]: 5, [BROTLI_PARAM_SIZE_HINT]: doc.length }
    })
  },
  zstd: function zstdWide (doc) {
    return zlib.zstdCompressSync(doc, { params: { [zlib.constants.ZSTD_c_windowLog]: 23 } })
  }
})

/** The windowed codecs among --bomb-codecs (this Node's, unless given). */
function windowedCodecs (params) {
  return params.bombCodecs.filter(function windowed (codec) { return Object.hasOwn(WIDE, codec) })
}

/** The summary /bad gives a document, from the same tally /bad uses (lib/parse/tally.js). */
function summaryOf (doc) {
  const tally = finishTally(tallyRecords(createTally(), recordsOf(JSON.parse(doc.toString('utf8')), 'json')))
  return {
    items: tally.items,
    idSum: tally.idSum,
    numbers: tally.numbers,
    numbersChecksum: tally.numbersChecksum,
    inflatedBytes: doc.length,
    sha256: createHash('sha256').update(doc).digest('hex')
  }
}

/** 9a. Its bodies: one generated document, compressed in each windowed codec with the widest window, into the scratch directory. */
export async function prepareWideBodies (params, scratch) {
  const doc = Buffer.from(await text(createJsonStream({ bytes: params.windowBytes, seed: 9 })))
  const files = {}
  for (const codec of windowedCodecs(params)) {
    files[codec] = path.join(scratch, `wide.json.${codec}`)
    await fs.promises.writeFile(files[codec], WIDE[codec](doc))
  }
  return { files, expected: summaryOf(doc) }
}

/** What a summary from the lab says of the document, less what the codec changes (the compressed size). */
function sameDocument (summary, expected) {
  return Object.keys(expected).every(function equal (key) { return summary?.[key] === expected[key] })
}

/**
 * 9a. `windowUploads` valid bodies with the widest window in each windowed codec, all at once, to a
 * streaming route: each must answer 200 with /bad's summary of the document.
 */
export async function wideWindows (ctx) {
  const { windowUploads } = ctx.params
  const probe = ctx.probeAfter(500)
  const broken = []
  const parts = []
  for (const [codec, file] of Object.entries(ctx.input.files)) {
    const body = await fs.promises.readFile(file)
    const answers = await Promise.all(Array.from({ length: windowUploads }, function uploadOne () {
      return ctx.clients.request(`${ctx.url}/${ctx.route}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': codec, 'content-length': String(body.length) },
        body,
        timeoutMs: ctx.timeLeft()
      })
    }))
    const others = answers.filter(function differs (a) { return !(a.status === 200 && sameDocument(a.body?.summary, ctx.input.expected)) })
    const same = answers.length - others.length
    if (others.length > 0) {
      const got = [...new Set(others.map(labelOf))].join(', ')
      broken.push(`${others.length} of ${answers.length} ${codec} uploads without /bad's summary (${got})`)
    }
    parts.push(`${codec} (${formatBytes(body.length)} each): ${same} of ${answers.length} with /bad's summary`)
  }
  await probe
  return {
    summary: `${windowUploads} uploads at once of a ${formatBytes(ctx.input.expected.inflatedBytes)} document ` +
      `in each codec's widest window: ${parts.join('; ')}`,
    expected: ctx.input.expected,
    broken
  }
}

/** 9b. Its bodies: the ratio bombs of each windowed codec, made once into the scratch directory. */
export function prepareWindowBombs (params, scratch) {
  return prepareRatioBombs(windowedCodecs(params), params.bombBytes, scratch)
}

/** Ratio bombs of `bombBytes` in each codec, made once by zlib's compressor into the scratch directory. */
export async function prepareRatioBombs (codecs, bombBytes, scratch) {
  for (const codec of codecs) await prepareBomb({ variant: 'ratio', codec, bytes: String(bombBytes) }, { cacheDir: scratch })
  return { cacheDir: scratch }
}

/** 9b. `windowBombs` ratio bombs at once in each windowed codec, to a streaming route: every client must be answered. */
export async function windowBombs (ctx) {
  const { windowBombs: count, bombBytes } = ctx.params
  const probe = ctx.probeAfter(500)
  const broken = []
  const parts = []
  for (const codec of windowedCodecs(ctx.params)) {
    const answers = await Promise.all(Array.from({ length: count }, function bombOne () {
      const bomb = createBomb({ variant: 'ratio', codec, bytes: String(bombBytes) }, { cacheDir: ctx.input.cacheDir })
      return ctx.clients.request(`${ctx.url}/${ctx.route}`, {
        method: 'POST',
        headers: { ...bomb.uploadHeaders, 'content-length': String(bomb.compressedBytes) },
        streams: bomb.streams,
        timeoutMs: ctx.timeLeft()
      })
    }))
    const unanswered = answers.filter(function noAnswer (a) { return a.status === 0 || typeof a.body?.error?.type !== 'string' }).length
    if (unanswered > 0) broken.push(`${unanswered} of ${count} ${codec} bombs without the lab's JSON answer`)
    const statuses = [...new Set(answers.map(labelOf))]
    parts.push(`${codec}: ${statuses.join(', ')}`)
  }
  await probe
  return {
    summary: `${count} ratio bombs at once (${formatBytes(bombBytes)} inflated each) in each windowed codec: ${parts.join('; ')}`,
    broken
  }
}

/** An answer as a status and the lab's error type, or the client's failure. */
function labelOf (answer) {
  return answer.status === 0 ? answer.error : `${answer.status} ${answer.body?.error?.type ?? ''}`.trim()
}
