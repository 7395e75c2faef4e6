/** A process tree as /proc shows it: members, memory, held connections, CPU time, signals; null readers without /proc. */
import fs from 'node:fs'
import { procAvailable } from '../../lib/util/platform.js'
import { readProcMemory } from '../../lib/metrics/proc-memory.js'

/** /proc/<pid>/stat fields after the command (which may hold spaces and parentheses). */
const STAT_STATE = 0
const STAT_PPID = 1
const STAT_PGRP = 2
/** The state of a socket that listens, in /proc/net/tcp. */
const TCP_LISTEN = '0A'
/** The kernel's socket tables under /proc/<pid>/net, and the column of each that holds the inode. */
const SOCKET_TABLES = Object.freeze({
  tcp: 9, tcp6: 9, udp: 9, udp6: 9, udplite: 9, udplite6: 9, raw: 9, raw6: 9, icmp: 9, icmp6: 9, unix: 6, netlink: 9, packet: 8
})

/** @typedef {{ pid: number, pgid?: number|null, uid?: number|null }} TreeRoot uid: the tree's own user, if any */

/** The pids of the tree, the root first (alone where /proc is missing); zombies left out. */
export function treePids ({ pid, pgid = null, uid = null }) {
  if (!procAvailable()) return [pid]
  const all = []
  for (const name of safeReaddir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const stat = readStat(Number(name))
    if (stat !== null) all.push(stat)
  }
  const members = new Set([pid])
  for (const p of all) {
    if (p.state === 'Z') continue
    if ((pgid !== null && p.pgrp === pgid) || (uid !== null && ownerOf(p.pid) === uid)) members.add(p.pid)
  }
  // descendants by parent pid, until no new one turns up
  let grew = true
  while (grew) {
    grew = false
    for (const p of all) {
      if (p.state !== 'Z' && !members.has(p.pid) && members.has(p.ppid)) {
        members.add(p.pid)
        grew = true
      }
    }
  }
  const zombies = new Set(all.filter(function zombie (p) { return p.state === 'Z' }).map(function id (p) { return p.pid }))
  return [...members].filter(function running (p) { return p === pid || !zombies.has(p) })
}

/** The sums of the tree's RSS and of its processes' peaks (a bound on its peak), in bytes; null when the root is unreadable. */
export function readTreeMemory (pids) {
  let rss = 0
  let peak = 0
  let processes = 0
  for (const [k, pid] of pids.entries()) {
    const memory = readProcMemory(pid)
    if (memory === null) {
      if (k === 0) return null
      continue
    }
    rss += memory.rss
    peak += memory.peak
    processes++
  }
  return { rss, peak, processes }
}

/** Reset every process's peak to its RSS now (5 to clear_refs, Linux >= 4.0); false if one could not be. */
export function resetTreePeaks (pids) {
  if (!procAvailable()) return false
  let all = true
  for (const pid of pids) {
    try {
      fs.writeFileSync(`/proc/${pid}/clear_refs`, '5')
    } catch {
      all = false
    }
  }
  return all
}

/** Descriptors of sockets listed as connections on `port` or listed nowhere (closed on the wire); null without /proc. */
export function heldConnections (pids, port) {
  if (!procAvailable()) return null
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  const onPort = new Set()
  for (const table of ['tcp', 'tcp6']) {
    for (const fields of tableRows(`/proc/self/net/${table}`)) {
      const localPort = fields[1].slice(fields[1].lastIndexOf(':') + 1)
      if (localPort === hexPort && fields[3] !== TCP_LISTEN) onPort.add(fields[9])
    }
  }
  // every socket the kernel lists, in the grader's namespace and in each of the tree's own
  const listed = new Set()
  const namespaces = new Set()
  for (const dir of ['/proc/self', ...pids.map(function procDir (pid) { return `/proc/${pid}` })]) {
    let ns
    try {
      ns = fs.readlinkSync(`${dir}/ns/net`)
    } catch {
      continue
    }
    if (namespaces.has(ns)) continue
    namespaces.add(ns)
    for (const [table, column] of Object.entries(SOCKET_TABLES)) {
      for (const fields of tableRows(`${dir}/net/${table}`)) if (fields[column] !== undefined) listed.add(fields[column])
    }
  }
  let held = 0
  for (const pid of pids) {
    for (const fd of safeReaddir(`/proc/${pid}/fd`)) {
      let link
      try {
        link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`)
      } catch {
        continue
      }
      const match = /^socket:\[(\d+)\]$/.exec(link)
      if (match && (onPort.has(match[1]) || !listed.has(match[1]))) held++
    }
  }
  return held
}

/** The rows of a /proc/net table, split on blanks, the header left out. */
function tableRows (file) {
  let text
  try {
    text = fs.readFileSync(file, 'latin1')
  } catch {
    return []
  }
  const rows = text.split('\n').slice(1).map(function split (line) { return line.trim().split(/\s+/) })
  return rows.filter(function full (fields) { return fields.length > 1 })
}

/** Send `signal` to the process group, then to every member treePids finds (those that left the group). */
export function signalTree (root, signal) {
  const pgid = root.pgid ?? null
  if (pgid !== null) signalQuietly(-pgid, signal)
  for (const pid of treePids(root)) signalQuietly(pid, signal)
}

/** Whether anything of the tree runs: its group takes signal 0 (no /proc needed), or treePids finds a member. */
export function treeAlive (root) {
  const pgid = root.pgid ?? null
  if (pgid !== null && signalQuietly(-pgid, 0)) return true
  return treePids(root).some(function stillThere (pid) { return signalQuietly(pid, 0) && readStat(pid)?.state !== 'Z' })
}

/** Whether every process of the tree is stopped (state T in /proc); null where /proc is missing. */
export function treeStopped (root) {
  if (!procAvailable()) return null
  return treePids(root).every(function stopped (pid) {
    const state = readStat(pid)?.state
    return state === undefined || state === 'T' || state === 't' || state === 'Z'
  })
}

/** Whether one process runs: it takes signal 0 (or is someone else's) and is not a zombie where /proc shows it. */
export function processRuns (pid) {
  if (!signalQuietly(pid, 0)) return false
  if (!procAvailable()) return true
  return readStat(pid)?.state !== 'Z'
}

/** true when the signal was delivered (or the process exists but is not ours to signal). */
function signalQuietly (target, signal) {
  try {
    process.kill(target, signal)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}

/** /proc reports CPU time in ticks of 1/USER_HZ s: 100 a second on Linux, whatever the kernel's own tick rate. */
const USER_HZ = 100

/** A process's CPU time (utime + stime, all threads) in ms, in 10 ms steps; null where /proc is missing or it is gone. */
export function cpuMs (pid) {
  const stat = readStat(pid)
  if (stat === null) return null
  return Number.isFinite(stat.cpuTicks) ? stat.cpuTicks * 1000 / USER_HZ : null
}

/** The CPU time of every member /proc shows, in ms; null where /proc is missing. */
export function treeCpuMs (root) {
  if (!procAvailable()) return null
  let total = 0
  for (const pid of treePids(root)) total += cpuMs(pid) ?? 0
  return total
}

function readStat (pid) {
  let text
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return null
  }
  // the command name (field 2) may hold spaces and parentheses: count the fields after its last ')'
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  // fields[0] is field 3 (state): utime is field 14, stime field 15
  const cpuTicks = Number(fields[11]) + Number(fields[12])
  return { pid, state: fields[STAT_STATE], ppid: Number(fields[STAT_PPID]), pgrp: Number(fields[STAT_PGRP]), cpuTicks }
}

/** The user a process runs as: the owner of its /proc directory. */
function ownerOf (pid) {
  try {
    return fs.statSync(`/proc/${pid}`).uid
  } catch {
    return null
  }
}

function safeReaddir (dir) {
  try {
    return fs.readdirSync(dir)
  } catch {
    return []
  }
}
