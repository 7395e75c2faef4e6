// Errors that say the lab is full or going: requests, connections, streams, pipelines, memory, disk, closing.
import { formatMiB } from '../util/units.js'
import { createError } from './lab-error.js'

/** A 503 that asks the client to come back in `retryAfter` seconds (figures and the Retry-After header). */
function comeBack (type, message, figures, retryAfter) {
  const error = createError(503, type, message, { ...figures, retryAfter })
  error.headers['Retry-After'] = String(retryAfter)
  return error
}

export function overloaded (limit, retryAfterSeconds) {
  return comeBack('server.busy', `more than ${limit} ingest requests in flight: try again shortly`, { limit }, retryAfterSeconds)
}

/**
 * 507 disk.quota.exceeded: a write would take what the lab stores under its data
 * directory past the disk quota. `used` counts everything else, `asked` this write.
 */
export function diskQuotaExceeded (quota, used, asked) {
  return createError(507, 'disk.quota.exceeded',
    `writing ${asked} bytes would pass the ${quota}-byte disk quota (${used} bytes in use): ` +
    'free space with DELETE /uploads, or start the lab with a larger --disk-quota',
    { quota, used, asked })
}

/** 503 save.busy: one `GET /generate?save=1` at a time. */
export function saveBusy (retryAfterSeconds) {
  return comeBack('save.busy', `a save is already being written: one at a time, try again in ${retryAfterSeconds} s`, {}, retryAfterSeconds)
}

/** 503 server.busy: a connection past `maxConnections`, answered on the raw socket by lib/http/server.js. */
export function tooManyConnections (limit, retryAfterSeconds) {
  return comeBack('server.busy', `more than ${limit} connections open: try again shortly`, { limit }, retryAfterSeconds)
}

/** 503 server.busy: a GET /metrics stream past the hub's `maxClients`. */
export function tooManyStreams (limit, retryAfterSeconds) {
  const message = `more than ${limit} GET /metrics streams open: try again later, or ask for ?format=json`
  return comeBack('server.busy', message, { limit }, retryAfterSeconds)
}

/** 503 server.closing: a request that reached an app after its `close()` (its successor answers). */
export function serverClosing (retryAfterSeconds) {
  return comeBack('server.closing', 'the lab is shutting down: try again shortly', {}, retryAfterSeconds)
}

/** How to get past a memory refusal, by route: what the message says. */
const WAYS_AROUND_BUDGET = Object.freeze({
  bad: 'run the lab with a larger --memory-limit, or with --unsafe-bad to watch the worker die',
  default: 'run the lab with a larger --memory-limit'
})

/** 413 memory.budget.exceeded: this request alone would pass the memory budget (lib/limits/admission.js). */
export function budgetExceeded ({ route, budget, projected, available, what }) {
  const hint = WAYS_AROUND_BUDGET[route] ?? WAYS_AROUND_BUDGET.default
  return createError(413, 'memory.budget.exceeded',
    `${what} would need ${formatMiB(projected)}, more than the ${formatMiB(available)} this lab can give one request ` +
    `(memory budget ${formatMiB(budget)}): ${hint}`,
    { route, budget, projected, available, hint })
}

/** 413 buffer.cap.exceeded: an experiment's pipeline (backpressure's "ignore" mode) held more than its cap. */
export function bufferCapExceeded ({ route, limit, held, stage }) {
  return createError(413, 'buffer.cap.exceeded',
    `the ${stage} held ${formatMiB(held)}, past the cap of ${formatMiB(limit)}: ` +
    'writes that ignore write()\'s return buffer what arrives',
    { route, limit, held, stage })
}

/** 503 memory.busy: the request fits the memory budget, but not beside what runs now. */
export function memoryBusy ({ route, budget, projected, available, what, retryAfter }) {
  return comeBack('memory.busy',
    `${what} would need ${formatMiB(projected)} and only ${formatMiB(available)} of the memory budget (${formatMiB(budget)}) ` +
    'is free while other requests run: try again shortly',
    { route, budget, projected, available }, retryAfter)
}

/** 503 server.busy: a streaming request waited `ingest.queueMs` for its decoders' room while nobody decoded or gave any back. */
export function decodersBusy (budget, stuckMs, waitedMs, retryAfterSeconds) {
  return comeBack('server.busy',
    `the decoders of the bodies streaming now hold the ${budget}-byte decoder budget, ` +
    `and none gave any back or decoded a byte for ${stuckMs} ms: try again shortly`,
    { limit: budget, stuckMs, waitedMs }, retryAfterSeconds)
}

/** 503 server.busy: a /good request's queue was stuck for `ingest.queueMs` (no pipeline came free or moved). */
export function pipelinesBusy (pipelines, stuckMs, waitedMs, retryAfterSeconds) {
  return comeBack('server.busy',
    `none of the ${pipelines} streaming pipelines came free or moved its body for ${stuckMs} ms: try again shortly`,
    { limit: pipelines, stuckMs, waitedMs }, retryAfterSeconds)
}
