/**
 * The kernel's queues of one TCP connection, read where Linux shows them:
 * /proc/net/tcp and /proc/net/tcp6, one line per socket, `tx_queue:rx_queue`
 * in hex. On loopback both ends of a connection are sockets of this machine,
 * so one read gives the server's receive queue (bytes the kernel took in that
 * the server has not read) and the client's send queue (bytes its process
 * wrote that the kernel has not yet delivered). Elsewhere (macOS, Windows, no
 * /proc) nothing is read: every figure is null, and `source` says so.
 */
import fs from 'node:fs'
import { procAvailable } from '../../lib/util/platform.js'

const TABLES = Object.freeze(['/proc/net/tcp', '/proc/net/tcp6'])

/** The states /proc/net/tcp numbers (include/net/tcp_states.h), those a connection shows. */
const STATES = Object.freeze({
  '01': 'established',
  '04': 'fin-wait-1',
  '05': 'fin-wait-2',
  '06': 'time-wait',
  '07': 'close',
  '08': 'close-wait',
  '09': 'last-ack',
  '0A': 'listen',
  '0B': 'closing'
})

/**
 * The sockets of a /proc/net/tcp or /proc/net/tcp6 text.
 * @param {string} text the file's text, its heading line included
 * @returns {Array<{ localPort: number, remotePort: number, state: string, txQueue: number, rxQueue: number }>}
 *   a line that does not read as a socket is skipped
 */
export function parseTcpTable (text) {
  const sockets = []
  for (const line of String(text).split('\n')) {
    const fields = line.trim().split(/\s+/)
    // sl local_address rem_address st tx_queue:rx_queue ...
    if (fields.length < 5 || !/^\d+:$/.test(fields[0])) continue
    const local = /:([0-9A-Fa-f]{4})$/.exec(fields[1])
    const remote = /:([0-9A-Fa-f]{4})$/.exec(fields[2])
    const queues = /^([0-9A-Fa-f]{1,16}):([0-9A-Fa-f]{1,16})$/.exec(fields[4])
    if (!local || !remote || !queues) continue
    sockets.push({
      localPort: parseInt(local[1], 16),
      remotePort: parseInt(remote[1], 16),
      state: STATES[fields[3].toUpperCase()] ?? fields[3],
      txQueue: parseInt(queues[1], 16),
      rxQueue: parseInt(queues[2], 16)
    })
  }
  return sockets
}

/**
 * The two ends' queues of the connection between `serverPort` and `clientPort`, from tables' text.
 * @param {string} text one or more tables' text
 * @param {{ serverPort: number, clientPort: number }} ports
 * @returns {{ serverReceiveQueue: number|null, serverSendQueue: number|null, clientSendQueue: number|null,
 *   clientReceiveQueue: number|null }} null for an end the tables do not show (closed, or on another machine)
 */
export function connectionQueues (text, { serverPort, clientPort }) {
  let server = null
  let client = null
  for (const socket of parseTcpTable(text)) {
    if (socket.localPort === serverPort && socket.remotePort === clientPort) server = socket
    else if (socket.localPort === clientPort && socket.remotePort === serverPort) client = socket
  }
  return {
    serverReceiveQueue: server?.rxQueue ?? null,
    serverSendQueue: server?.txQueue ?? null,
    clientSendQueue: client?.txQueue ?? null,
    clientReceiveQueue: client?.rxQueue ?? null
  }
}

/**
 * Read the connection's queues now.
 * @param {{ serverPort: number, clientPort: number }} ports
 * @param {{ tables?: string[], available?: boolean }} [where] the files (tests give fixtures), and whether /proc is there
 * @returns {Promise<{ source: string|null, serverReceiveQueue: number|null, serverSendQueue: number|null,
 *   clientSendQueue: number|null, clientReceiveQueue: number|null }>} `source` null: nothing could be read here
 */
export async function readConnectionQueues (ports, { tables = TABLES, available = procAvailable() } = {}) {
  if (!available) return { source: null, ...connectionQueues('', ports) }
  const texts = await Promise.all(tables.map(function readTable (file) {
    return fs.promises.readFile(file, 'latin1').catch(function noTable () { return '' })
  }))
  const text = texts.join('\n')
  if (text.trim() === '') return { source: null, ...connectionQueues('', ports) }
  return { source: '/proc/net/tcp', ...connectionQueues(text, ports) }
}
