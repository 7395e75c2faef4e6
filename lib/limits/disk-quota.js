// A disk quota for everything the lab writes under its data directory, one per app: the files on disk and
// the writes in flight, each reserved before its first byte; 507 before a chunk that would pass it. README.md.
import fs from 'node:fs'
import path from 'node:path'
import { Transform } from 'node:stream'
import { diskQuotaExceeded } from '../errors/index.js'
import { GiB } from '../util/units.js'

/** What a file costs at least, and the unit sizes are rounded up to. */
const BLOCK_BYTES = 4096

/** Defaults of `createDiskQuota`. */
const DISK_QUOTA_DEFAULTS = Object.freeze({
  /** Bytes the lab may keep under its data directory. */
  quota: 2 * GiB,
  /** Directory entries one walk looks at, at most: past it, the files not reached are not counted. */
  maxEntries: 100_000
})

/** Files `lstat`ed at once by a walk. */
const STAT_BATCH = 32
/** Age of the last walk past which a new write starts another (without waiting for it). */
const STALE_WALK_MS = 10_000

/** What a file of `bytes` bytes costs: rounded up to whole blocks, one at least. */
function diskCost (bytes) {
  return Math.max(1, Math.ceil(bytes / BLOCK_BYTES)) * BLOCK_BYTES
}

function normalizeDiskQuotaOptions (options) {
  if (options === null || typeof options !== 'object') throw new TypeError('disk quota options must be an object')
  const { dir } = options
  if (typeof dir !== 'string' || dir === '') throw new TypeError('disk quota option dir must be a path')
  const quota = options.quota ?? DISK_QUOTA_DEFAULTS.quota
  const maxEntries = options.maxEntries ?? DISK_QUOTA_DEFAULTS.maxEntries
  if (!Number.isSafeInteger(quota) || quota < 1) throw new TypeError(`disk quota must be a positive integer of bytes, got ${quota}`)
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
    throw new TypeError(`disk quota option maxEntries must be a positive integer, got ${maxEntries}`)
  }
  return Object.freeze({ dir: path.resolve(dir), quota, maxEntries })
}

/**
 * The disk quota of one app. `after`: work to let finish before the first walk (the start-up clean-ups), so
 * the walk counts what they leave; its failure is its owner's to report.
 */
export function createDiskQuota (options) {
  const { dir, quota, maxEntries } = normalizeDiskQuotaOptions(options)
  /** path -> cost of the files known to be on disk */
  const files = new Map()
  let filesCost = 0
  /** the writes in flight */
  const reservations = new Set()
  let reservedCost = 0
  /** paths the lab wrote or deleted while a walk ran: what the lab did wins over what the walk saw */
  let touched = null
  /** the temporary files of writes that ended while a walk ran: what it saw of them is gone */
  let endedClaims = null
  let walking = null
  let queued = null
  const scan = { walks: 0, complete: false, entries: 0, ms: 0, at: null }

  function setFile (file, cost) {
    filesCost += cost - (files.get(file) ?? 0)
    files.set(file, cost)
    touched?.add(file)
  }

  function deleteFile (file) {
    const cost = files.get(file) ?? 0
    filesCost -= cost
    files.delete(file)
    touched?.add(file)
    return cost
  }

  /** Whether a file is one a write in flight is making (its own reservation counts it), or made and ended. */
  function claimed (file) {
    for (const reservation of reservations) {
      for (const prefix of reservation.claims) if (file.startsWith(prefix)) return true
    }
    for (const prefix of endedClaims ?? []) if (file.startsWith(prefix)) return true
    return false
  }

  /** Walk the data directory; what it finds is the truth for files no write touched meanwhile. Never rejects. */
  async function walkOnce () {
    const started = performance.now()
    touched = new Set()
    endedClaims = []
    const found = new Map()
    let entries = 0
    let complete = true
    let truncated = false
    const pending = [dir]
    while (pending.length > 0 && !truncated) {
      const current = pending.pop()
      let list
      try {
        list = await fs.promises.readdir(current, { withFileTypes: true })
      } catch (err) {
        // gone meanwhile (or never made) is nothing to count; unreadable is a gap
        if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') complete = false
        continue
      }
      const regular = []
      for (const entry of list) {
        if (entries === maxEntries) {
          truncated = true
          break
        }
        entries++
        const full = path.join(current, entry.name)
        // symbolic links are neither followed nor counted: a link to / must not make a walk of the disk
        if (entry.isDirectory()) pending.push(full)
        else if (entry.isFile()) regular.push(full)
      }
      for (let i = 0; i < regular.length; i += STAT_BATCH) {
        await Promise.all(regular.slice(i, i + STAT_BATCH).map(async function measure (file) {
          try {
            found.set(file, diskCost((await fs.promises.lstat(file)).size))
          } catch {
            // removed between readdir and lstat: not there to count
          }
        }))
      }
    }
    let total = 0
    const next = new Map()
    for (const [file, cost] of found) {
      if (touched.has(file) || claimed(file)) continue
      next.set(file, cost)
      total += cost
    }
    for (const file of touched) {
      const cost = files.get(file)
      if (cost !== undefined && !next.has(file)) {
        next.set(file, cost)
        total += cost
      }
    }
    touched = null
    endedClaims = null
    files.clear()
    for (const [file, cost] of next) files.set(file, cost)
    filesCost = total
    const ms = Math.round(performance.now() - started)
    Object.assign(scan, { walks: scan.walks + 1, complete: complete && !truncated, entries, ms, at: Date.now() })
  }

  /** A walk that starts after this call (one running may have missed the change); callers at once share it. */
  function refresh () {
    if (walking === null) {
      walking = walkOnce().finally(function walked () { walking = null })
      return walking
    }
    if (queued === null) {
      queued = walking.then(function walkAgain () {
        queued = null
        return refresh()
      })
    }
    return queued
  }

  const ready = Promise.resolve(options.after)
    .catch(function cleanUpFailed () {
      // reported by whoever started it; the walk counts whatever it left
    })
    .then(refresh)

  function used () {
    return filesCost + reservedCost
  }

  function fits (extra) {
    return filesCost + reservedCost + extra <= quota
  }

  /** Grow `reservation` to `cost`, walking the directory once more before a 507. */
  async function admit (reservation, cost) {
    await ready
    if (tryGrow(reservation, cost)) return
    await refresh()
    if (tryGrow(reservation, cost)) return
    throw diskQuotaExceeded(quota, used() - reservation.cost, cost)
  }

  function tryGrow (reservation, cost) {
    if (reservation.settled) throw new Error('a settled reservation cannot grow')
    const extra = cost - reservation.cost
    if (extra <= 0) return true
    if (!fits(extra)) return false
    reservation.cost = cost
    reservedCost += extra
    return true
  }

  function settle (reservation) {
    if (reservation.settled) return false
    reservation.settled = true
    reservations.delete(reservation)
    reservedCost -= reservation.cost
    endedClaims?.push(...reservation.claims)
    return true
  }

  /**
   * Reserve room for a write before its first byte (`projected`, 0: not known); 507 if even that does not fit.
   * `claims`: paths or prefixes of its temporary files, which a walk leaves to the reservation.
   */
  async function reserve (projected, { claims = [] } = {}) {
    if (!Number.isSafeInteger(projected) || projected < 0) throw new TypeError(`projected bytes must be an integer >= 0, got ${projected}`)
    const state = { cost: 0, settled: false, claims: claims.map(function absolute (claim) { return path.resolve(claim) }) }
    reservations.add(state)
    if (walking === null && scan.at !== null && Date.now() - scan.at > STALE_WALK_MS) refresh()
    try {
      await admit(state, diskCost(projected))
    } catch (err) {
      settle(state)
      throw err
    }
    const reservation = Object.freeze({
      /** Bytes reserved so far (in blocks). */
      get cost () { return state.cost },
      /** Make sure `bytes` written in all are covered; false when they would pass the quota as counted now. */
      tryCover: function tryCover (bytes) { return tryGrow(state, diskCost(bytes)) },
      /** As tryCover, but a refusal comes only after a fresh walk: 507 disk.quota.exceeded. */
      cover: function cover (bytes) { return admit(state, diskCost(bytes)) },
      /** A Transform before the file in a pipeline: the chunk that would pass the quota is never written. */
      meter: function meter () { return reservationMeter(reservation) },
      /** The write is on disk at `file`, `bytes` long: the file now counts, the reservation ends. */
      commit: function commit (file, bytes) {
        if (settle(state)) setFile(path.resolve(file), diskCost(bytes))
      },
      /** The write failed and left nothing: its room is free again. Safe to call twice. */
      release: function release () { settle(state) }
    })
    return reservation
  }

  /** A file the lab removed no longer counts; returns what it cost (0 if unknown). */
  function forget (file) {
    return deleteFile(path.resolve(file))
  }

  /** The figures, for /metrics and the delete routes. */
  function snapshot () {
    return {
      used: used(),
      quota,
      files: files.size,
      writes: reservations.size,
      reserved: reservedCost,
      scan: { ...scan }
    }
  }

  return Object.freeze({ dir, quota, ready, used, reserve, forget, refresh, snapshot })
}

/** Covers the bytes through it before passing them on; `bytes` counts them. */
function reservationMeter (reservation) {
  const meter = new Transform({
    transform: function meterChunk (chunk, encoding, callback) {
      meter.bytes += chunk.length
      if (reservation.tryCover(meter.bytes)) {
        callback(null, chunk)
        return
      }
      reservation.cover(meter.bytes).then(function covered () { callback(null, chunk) }, callback)
    }
  })
  meter.bytes = 0
  return meter
}

/**
 * @typedef {ReturnType<typeof createDiskQuota>} DiskQuota
 * @typedef {Awaited<ReturnType<DiskQuota['reserve']>>} Reservation
 */
