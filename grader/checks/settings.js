/** What a run sends and passes: the presets, the limits and waits the card states, the seed. Bad values: TypeError. */
import { randomInt } from 'node:crypto'
import os from 'node:os'
import { GiB, MB } from '../../lib/util/units.js'

/** The stated limits: slopes per 100 MB of body or per upload in flight; a rise under `noiseMiB` is flat whatever its slope. */
export const LIMITS = Object.freeze({
  /** MiB of peak growth per 100 MB more of inflated body. */
  sizeSlopeMiBPer100MB: 25,
  /** MiB of peak growth per upload more in flight. */
  concurrencySlopeMiBPerRequest: 8,
  /** A rise under this across a whole curve is measurement noise. */
  noiseMiB: 24,
  /** The handler's MB/s as a fraction of /streamparser-json's on the same body, at least: same library, ~1×. */
  speedRatio: 0.5,
  /** Peak growth while a zip bomb is refused, at most. */
  bombGrowthMiB: 64
})

/** Sizes are inflated bytes of generated documents; a large body may take `requestMs` plus a second per `slowestMBps` MB. */
const PRESETS = Object.freeze({
  full: Object.freeze({
    sizes: Object.freeze([10 * MB, 50 * MB, 200 * MB]),
    concurrency: Object.freeze([1, 4, 16]),
    concurrencyBytes: 10 * MB,
    speedBytes: 50 * MB,
    speedRepeat: 3,
    bombBytes: 10_000_000_000,
    aborts: 20,
    reference: true,
    requestMs: 15_000,
    bombMs: 60_000,
    slowestMBps: 4
  }),
  quick: Object.freeze({
    sizes: Object.freeze([5 * MB, 20 * MB, 50 * MB]),
    concurrency: Object.freeze([1, 4, 8]),
    concurrencyBytes: 8 * MB,
    speedBytes: 20 * MB,
    speedRepeat: 3,
    bombBytes: 2_000_000_000,
    aborts: 10,
    reference: true,
    requestMs: 8_000,
    bombMs: 20_000,
    slowestMBps: 4
  })
})

const KNOWN = Object.freeze([...Object.keys(PRESETS.full), 'memoryBudget'])

export const PRESET_NAMES = Object.freeze(Object.keys(PRESETS))

/** The RSS the lab child is killed past: a quarter of the machine within 1-4 GiB (room for /bad at 200 MB). */
function defaultGradeBudget () {
  return Math.min(4 * GiB, Math.max(1 * GiB, Math.floor(os.totalmem() / 4)))
}

/** A preset with overrides (members of a preset, and `memoryBudget` in bytes), checked: TypeError naming the bad one. */
export function normalizeSettings (preset = 'full', overrides = {}) {
  if (!Object.hasOwn(PRESETS, preset)) throw new TypeError(`preset must be one of ${Object.keys(PRESETS).join(', ')}, got ${preset}`)
  if (overrides === null || typeof overrides !== 'object') throw new TypeError('overrides must be an object')
  for (const key of Object.keys(overrides)) {
    if (!KNOWN.includes(key)) throw new TypeError(`unknown grade setting "${key}": try ${KNOWN.join(', ')}`)
  }
  const s = { preset, ...PRESETS[preset], memoryBudget: defaultGradeBudget(), ...overrides }
  checkList('sizes', s.sizes, 1, 1_000_000_000, 2)
  checkList('concurrency', s.concurrency, 1, 256, 2)
  for (const name of ['concurrencyBytes', 'speedBytes', 'bombBytes', 'memoryBudget']) {
    checkInteger(name, s[name], 1, Number.MAX_SAFE_INTEGER)
  }
  for (const name of ['speedRepeat', 'aborts']) checkInteger(name, s[name], 1, 1000)
  for (const name of ['requestMs', 'bombMs']) checkInteger(name, s[name], 100, 3_600_000)
  checkInteger('slowestMBps', s.slowestMBps, 1, 10_000)
  if (typeof s.reference !== 'boolean') throw new TypeError(`reference must be a boolean, got ${s.reference}`)
  return Object.freeze({ ...s, sizes: Object.freeze([...s.sizes]), concurrency: Object.freeze([...s.concurrency]) })
}

/** The largest seed: lib/generate/items.js takes a 32-bit seed. */
export const MAX_SEED = 0xFFFFFFFF

/** A seed from the OS's random source, 0..MAX_SEED, so no handler knows the documents before they come. */
export function newSeed () {
  return randomInt(0, MAX_SEED + 1)
}

/** A seed from the command line or a caller; TypeError unless a whole number from 0 to MAX_SEED. */
export function normalizeSeed (value) {
  const seed = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value.trim()) : value
  if (!Number.isSafeInteger(seed) || seed < 0 || seed > MAX_SEED) {
    throw new TypeError(`seed must be a whole number from 0 to ${MAX_SEED}, got ${value}`)
  }
  return seed
}

export function timeoutFor (settings, bytes) {
  return settings.requestMs + Math.ceil(bytes / MB / settings.slowestMBps) * 1000
}

/** pendingWait's margin over the handler's own speed, its floor, and its ceiling, so that a run ends. */
export const PENDING_WAIT = Object.freeze({ MARGIN: 3, FLOOR_MS: 5000, CEILING_MS: 120_000 })

/** How long "nothing left pending" waits: MARGIN times the handler's measured time for the bytes delivered, bounded. */
export function pendingWait (m) {
  const { MARGIN, FLOOR_MS, CEILING_MS } = PENDING_WAIT
  if (m === undefined || m.MBps === null || !(m.MBps > 0)) {
    return { ms: CEILING_MS, basis: `the handler's speed was not measured, so the grader waits the ceiling, ${CEILING_MS / 1000} s` }
  }
  const needMs = m.receivedBytes / MB / m.MBps * 1000
  const ms = Math.round(Math.min(CEILING_MS, Math.max(FLOOR_MS, MARGIN * needMs)))
  return {
    ms,
    basis: `the aborted uploads delivered ${(m.receivedBytes / MB).toFixed(1)} MB of JSON, ${(needMs / 1000).toFixed(1)} s of work at ` +
      `the handler's measured ${m.MBps.toFixed(1)} MB/s, so the grader waits up to ${(ms / 1000).toFixed(1)} s (${MARGIN}× that, ` +
      `${FLOOR_MS / 1000} s to ${CEILING_MS / 1000} s)`
  }
}

function checkInteger (name, value, min, max) {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new TypeError(`${name} must be an integer from ${min} to ${max}, got ${value}`)
  }
}

function checkList (name, list, min, max, atLeast) {
  if (!Array.isArray(list) || list.length < atLeast) throw new TypeError(`${name} must be a list of at least ${atLeast} integers`)
  for (const value of list) checkInteger(name, value, min, max)
  for (let k = 1; k < list.length; k++) {
    if (list[k] <= list[k - 1]) throw new TypeError(`${name} must rise: ${list.join(', ')}`)
  }
}
