// The embedded database's password check: the server's half of PostgreSQL's SCRAM-SHA-256 exchange
// (RFC 5802, RFC 7677), run before pglite-socket sees a byte. Why it is needed, and why SCRAM: README.md.
import crypto from 'node:crypto'
import { listen } from '../util/listen.js'

export const MECHANISM = 'SCRAM-SHA-256'
const ITERATIONS = 4096
const PROTOCOL_3 = 196608
const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
const CANCEL_REQUEST = 80877102
/** PostgreSQL's own limit on a startup packet. */
const MAX_STARTUP = 10_000
/** A SASL message is a few hundred bytes; anything larger is not a client of ours. */
const MAX_SASL = 2048
const AUTH_SASL = 10
const AUTH_SASL_CONTINUE = 11
const AUTH_SASL_FINAL = 12

/** What the server keeps of the password (printable ASCII, 16+): one salt's stored and server keys. */
export function createScramVerifier (password) {
  if (typeof password !== 'string' || !/^[\x21-\x7e]{16,}$/.test(password)) {
    throw new TypeError('the embedded database\'s password must be at least 16 printable ASCII characters')
  }
  const salt = crypto.randomBytes(16)
  const salted = crypto.pbkdf2Sync(password, salt, ITERATIONS, 32, 'sha256')
  return Object.freeze({
    salt,
    iterations: ITERATIONS,
    storedKey: sha256(hmac(salted, 'Client Key')),
    serverKey: hmac(salted, 'Server Key')
  })
}

/**
 * Run the exchange on a socket nothing else reads yet. Resolves once the client proved the password, the socket
 * paused: the caller unshifts `replay` and hands it on. Rejects after answering and closing a client that failed,
 * stalled past `timeoutMs`, or left.
 */
export function authenticate (socket, verifier, { timeoutMs }) {
  return new Promise(function exchange (resolve, reject) {
    let buffered = Buffer.alloc(0)
    let stage = 'startup'
    let startup = null
    let user = ''
    let gs2Header = ''
    let clientFirstBare = ''
    let serverFirst = ''
    let nonce = ''
    const timer = setTimeout(function stalled () {
      refuse('08006', 'authentication timed out')
    }, timeoutMs)

    function onData (chunk) {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk])
      try {
        while (stage !== 'done' && step()) { /* each step consumed one message */ }
      } catch (err) {
        refuse(err.sqlState !== undefined ? err.sqlState : '08P01', err.message)
      }
    }

    /** Handle one whole message if it has arrived; false while waiting for more bytes. */
    function step () {
      if (stage === 'startup') {
        if (buffered.length < 8) return false
        const length = buffered.readInt32BE(0)
        const code = buffered.readInt32BE(4)
        if (length === 8 && (code === SSL_REQUEST || code === GSSENC_REQUEST)) {
          // no TLS and no GSS here: 'N', and the client goes on in plain text, as PostgreSQL lets it
          buffered = buffered.subarray(8)
          socket.write('N')
          return true
        }
        if (length === 16 && code === CANCEL_REQUEST) {
          // PGlite cannot cancel anything (pglite-socket drops these too): nothing to answer
          throw quiet('cancel request')
        }
        if (code !== PROTOCOL_3 || length < 8 || length > MAX_STARTUP) throw violation('expected a protocol 3.0 startup message')
        if (buffered.length < length) return false
        startup = buffered.subarray(0, length)
        buffered = buffered.subarray(length)
        user = startupParameters(startup).user ?? ''
        socket.write(authentication(AUTH_SASL, Buffer.from(`${MECHANISM}\0\0`)))
        stage = 'first'
        return true
      }
      const body = nextPasswordMessage()
      if (body === null) return false
      if (stage === 'first') {
        const end = body.indexOf(0)
        if (end === -1 || body.subarray(0, end).toString() !== MECHANISM) throw violation(`expected SASL mechanism ${MECHANISM}`)
        const clientFirst = body.subarray(end + 5).toString()
        const match = /^([ny]),,(n=[^,]*,r=([\x21-\x2b\x2d-\x7e]+))$/.exec(clientFirst)
        if (match === null) throw violation('malformed SCRAM client-first-message')
        gs2Header = `${match[1]},,`
        clientFirstBare = match[2]
        nonce = match[3] + crypto.randomBytes(18).toString('base64')
        serverFirst = `r=${nonce},s=${verifier.salt.toString('base64')},i=${verifier.iterations}`
        socket.write(authentication(AUTH_SASL_CONTINUE, Buffer.from(serverFirst)))
        stage = 'final'
        return true
      }
      const clientFinal = body.toString()
      const proofAt = clientFinal.lastIndexOf(',p=')
      const withoutProof = proofAt === -1 ? '' : clientFinal.slice(0, proofAt)
      const fields = new Map(withoutProof.split(',').map(function pair (field) { return [field.slice(0, 2), field.slice(2)] }))
      if (fields.get('c=') !== Buffer.from(gs2Header).toString('base64') || fields.get('r=') !== nonce) {
        throw violation('malformed SCRAM client-final-message')
      }
      const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`
      const proof = Buffer.from(clientFinal.slice(proofAt + 3), 'base64')
      const signature = hmac(verifier.storedKey, authMessage)
      if (proof.length !== signature.length) throw denied()
      const clientKey = Buffer.alloc(proof.length)
      for (let i = 0; i < proof.length; i++) clientKey[i] = proof[i] ^ signature[i]
      if (!crypto.timingSafeEqual(sha256(clientKey), verifier.storedKey)) throw denied()
      socket.write(authentication(AUTH_SASL_FINAL, Buffer.from(`v=${hmac(verifier.serverKey, authMessage).toString('base64')}`)))
      stage = 'done'
      cleanup()
      socket.pause()
      resolve({ replay: Buffer.concat([startup, buffered]), user })
      return false
    }

    /** The body of the next PasswordMessage ('p'), or null until it has all arrived. */
    function nextPasswordMessage () {
      if (buffered.length < 5) return null
      const length = buffered.readInt32BE(1)
      if (buffered[0] !== 0x70 || length < 4 || length > MAX_SASL) throw violation('expected a SASL response')
      if (buffered.length < 1 + length) return null
      const body = buffered.subarray(5, 1 + length)
      buffered = buffered.subarray(1 + length)
      return body
    }

    function denied () {
      const err = new Error(`password authentication failed for user "${user}"`)
      err.sqlState = '28P01'
      return err
    }

    function refuse (sqlState, message) {
      if (stage === 'done') return
      stage = 'done'
      cleanup()
      // the socket is ours to close now: a client that already left must not take the process down
      socket.on('error', function ignoreClosingError () {})
      if (sqlState === null || socket.destroyed) {
        socket.destroy()
      } else {
        // destroyed once the answer is out, not half-closed: a client that never closes would keep it
        socket.end(errorResponse(sqlState, message), function answered () { socket.destroy() })
      }
      const err = new Error(message)
      err.code = 'EAUTH'
      err.sqlState = sqlState
      reject(err)
    }

    function onEnd () {
      refuse(null, 'the client left during authentication')
    }

    function onError (err) {
      refuse(null, err.message)
    }

    function quiet (message) {
      const err = new Error(message)
      err.sqlState = null
      return err
    }

    const stopListening = listen(socket, { data: onData, end: onEnd, close: onEnd, error: onError })
    function cleanup () {
      clearTimeout(timer)
      stopListening()
    }
  })
}

function violation (message) {
  const err = new Error(message)
  err.sqlState = '08P01'
  return err
}

/** `user`, `database` ... from a StartupMessage: int32 length, int32 version, then name\0value\0 pairs, \0. */
function startupParameters (message) {
  const parts = message.subarray(8).toString().split('\0')
  const parameters = {}
  for (let i = 0; i + 1 < parts.length && parts[i] !== ''; i += 2) parameters[parts[i]] = parts[i + 1]
  return parameters
}

/** An Authentication message ('R'): its code, then its data. */
function authentication (code, data) {
  const message = Buffer.alloc(9 + data.length)
  message.write('R', 0)
  message.writeInt32BE(8 + data.length, 1)
  message.writeInt32BE(code, 5)
  data.copy(message, 9)
  return message
}

/** A FATAL ErrorResponse ('E'), as PostgreSQL sends before it closes the connection. */
function errorResponse (sqlState, message) {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${sqlState}\0M${message}\0\0`)
  const header = Buffer.alloc(5)
  header.write('E', 0)
  header.writeInt32BE(4 + fields.length, 1)
  return Buffer.concat([header, fields])
}

function hmac (key, text) {
  return crypto.createHmac('sha256', key).update(text).digest()
}

function sha256 (data) {
  return crypto.createHash('sha256').update(data).digest()
}
