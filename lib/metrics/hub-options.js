/** The metrics hub's options (lib/metrics/stream.js): frozen defaults and their normalisation, a TypeError for a bad value. */
import { integerOptions } from '../config/integers.js'
import { checkMode } from './alloc-sites.js'
import { MiB } from '../util/units.js'

/**
 * The bus events the hub forwards, under the same SSE event names (`run-record`: the dashboard's Runs panel lists again; `sites`:
 * a window of allocation sites, lib/metrics/alloc-sites.js).
 */
export const FORWARDED_EVENTS = Object.freeze(['request', 'experiment', 'peak', 'crash', 'run-record', 'sites'])

export const HUB_DEFAULTS = Object.freeze({
  /** Events kept for replay. */
  historySize: 3000,
  /** Events older than this are not replayed. */
  historyMs: 5 * 60_000,
  /** Comment lines that keep proxies from closing an idle stream. */
  heartbeatMs: 15_000,
  /** The reconnection delay sent to EventSource clients. */
  retryMs: 2000,
  /** A client whose socket has not drained for this long is ended. */
  stallMs: 60_000,
  /** A rise of the kernel peak RSS that makes a bus 'peak' event. */
  peakStep: MiB,
  /** Streams at once; past it, 503 `server.busy` with Retry-After (each sample is a write per client). */
  maxClients: 64,
  /**
   * When allocation sites are sampled (lib/metrics/alloc-sites.js): 'experiment' while an experiment runs or a stream asks
   * (`?allocationSites=1`), 'always' while anybody watches, 'off'.
   */
  allocationSampling: 'experiment'
})

const checkMs = integerOptions('option ')

export function normalizeHubOptions (options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('metrics options must be an object')
  const out = { ...HUB_DEFAULTS, ...options }
  checkMs('historySize', out.historySize, 1, 1_000_000)
  checkMs('historyMs', out.historyMs, 1000, 24 * 3600_000)
  checkMs('heartbeatMs', out.heartbeatMs, 10, 3600_000)
  checkMs('retryMs', out.retryMs, 0, 3600_000)
  checkMs('stallMs', out.stallMs, 10, 24 * 3600_000)
  checkMs('peakStep', out.peakStep, 1, Number.MAX_SAFE_INTEGER)
  checkMs('maxClients', out.maxClients, 1, 100_000)
  checkMode(out.allocationSampling, 'option metrics.allocationSampling')
  return Object.freeze(out)
}
