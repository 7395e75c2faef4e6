// The error catalogue as data: every type the lab sends, its status and the factories that make it.
import {
  compressedTooLarge, inflatedTooLarge, unsupportedMediaType, unsupportedEncoding, gzipInvalid, gzipTrailingData, gzipTruncated,
  encodingInvalid, encodingTruncated, encodingTrailingData, tooManyFrames, jsonInvalid, tooManyLayers, requestAborted, fromZlibError,
  recordTooLarge, shapeInvalid, ratioTooLarge, tooDeep, recordTooDense, bodyTimeout, bodyTooSlow, uploadTooLarge,
  expressJsonMediaUnsupported, expressJsonEncodingUnsupported, charsetUnsupported
} from './body.js'
import {
  overloaded, diskQuotaExceeded, saveBusy, tooManyConnections, tooManyStreams, serverClosing, budgetExceeded, memoryBusy, pipelinesBusy,
  decodersBusy, bufferCapExceeded
} from './capacity.js'
import {
  badParameter, notFound, methodNotAllowed, mediaNotAcceptable, hostMissing, hostNotAllowed, crossSiteRefused, tokenRequired,
  requestMalformed, bodyLengthInvalid, chunkExtensionsTooLarge, headersTooLarge, requestTooLong, httpVersionUnsupported,
  expectationFailed, fromParserError, internalError, requestInvalid, toLabError
} from './http.js'
import {
  uploadNotFound, experimentUnknown, experimentNotFound, experimentBusy, experimentNotRunning, workerCrashed, runNotFound, runIdAmbiguous,
  runInvalid, databaseUnavailable, databaseBusy, databaseNotSeeded
} from './services.js'

/**
 * Every type the lab sends, its status and factories; `passedThrough`: a type body-parser makes and the lab passes
 * on. test/errors-catalogue.test.js holds it to docs/errors.md and to the exported factories.
 */
export const ERROR_CATALOGUE = catalogue([
  [400, 'parameter.invalid', [badParameter]],
  [400, 'gzip.invalid', [gzipInvalid]],
  [400, 'gzip.trailing.data', [gzipTrailingData]],
  [400, 'gzip.truncated', [gzipTruncated]],
  [400, 'encoding.invalid', [encodingInvalid]],
  [400, 'encoding.trailing.data', [encodingTrailingData]],
  [400, 'encoding.truncated', [encodingTruncated]],
  [400, 'request.aborted', [requestAborted], 'express.json'],
  [400, 'host.missing', [hostMissing]],
  [400, 'request.malformed', [requestMalformed]],
  [400, 'body.length.invalid', [bodyLengthInvalid]],
  [400, 'experiment.unknown', [experimentUnknown]],
  [400, 'entity.parse.failed', [], 'express.json'],
  [400, 'request.invalid', [requestInvalid]],
  [401, 'token.required', [tokenRequired]],
  [401, 'token.invalid', [tokenRequired]],
  [403, 'host.not.allowed', [hostNotAllowed]],
  [403, 'request.cross.site', [crossSiteRefused]],
  [404, 'route.not.found', [notFound]],
  [404, 'experiment.not.found', [experimentNotFound]],
  [404, 'upload.not.found', [uploadNotFound]],
  [404, 'run.not.found', [runNotFound]],
  [405, 'method.not.allowed', [methodNotAllowed]],
  [406, 'media.not.acceptable', [mediaNotAcceptable]],
  [408, 'request.timeout', [bodyTimeout, requestTooLong]],
  [408, 'request.too.slow', [bodyTooSlow]],
  [409, 'experiment.busy', [experimentBusy]],
  [409, 'experiment.not.running', [experimentNotRunning]],
  [409, 'run.id.ambiguous', [runIdAmbiguous]],
  [413, 'entity.too.large', [compressedTooLarge, uploadTooLarge], 'express.json'],
  [413, 'inflated.too.large', [inflatedTooLarge]],
  [413, 'record.too.large', [recordTooLarge]],
  [413, 'record.too.dense', [recordTooDense]],
  [413, 'memory.budget.exceeded', [budgetExceeded]],
  [413, 'ratio.too.large', [ratioTooLarge]],
  [413, 'buffer.cap.exceeded', [bufferCapExceeded]],
  [413, 'encoding.too.many', [tooManyLayers]],
  [413, 'encoding.frames.too.many', [tooManyFrames]],
  [413, 'chunk.extensions.too.large', [chunkExtensionsTooLarge]],
  [415, 'media.unsupported', [unsupportedMediaType, expressJsonMediaUnsupported]],
  [415, 'encoding.unsupported', [unsupportedEncoding, expressJsonEncodingUnsupported], 'express.json'],
  [415, 'charset.unsupported', [charsetUnsupported], 'express.json'],
  [417, 'expectation.failed', [expectationFailed]],
  [422, 'json.invalid', [jsonInvalid]],
  [422, 'json.too.deep', [tooDeep]],
  [422, 'json.items.missing', [shapeInvalid]],
  [422, 'json.shape.invalid', [shapeInvalid]],
  [431, 'headers.too.large', [headersTooLarge]],
  [500, 'internal', [internalError]],
  [500, 'worker.crashed', [workerCrashed]],
  [422, 'run.invalid', [runInvalid]],
  [503, 'server.busy', [overloaded, tooManyConnections, tooManyStreams, pipelinesBusy, decodersBusy]],
  [503, 'server.closing', [serverClosing]],
  [503, 'memory.busy', [memoryBusy]],
  [503, 'save.busy', [saveBusy]],
  [503, 'database.unavailable', [databaseUnavailable]],
  [503, 'database.busy', [databaseBusy]],
  [503, 'database.not.seeded', [databaseNotSeeded]],
  [505, 'http.version.unsupported', [httpVersionUnsupported]],
  [507, 'disk.quota.exceeded', [diskQuotaExceeded]]
])

/** Functions that map another error to a factory's (they make no type of their own). */
export const ERROR_MAPPERS = Object.freeze([fromZlibError, fromParserError, toLabError])

function catalogue (rows) {
  const seen = new Set()
  return Object.freeze(rows.map(function entry ([status, type, factories, passedThrough = null]) {
    if (seen.has(type)) throw new TypeError(`error catalogue: ${type} is listed twice`)
    seen.add(type)
    return Object.freeze({ type, status, factories: Object.freeze(factories), passedThrough })
  }))
}
