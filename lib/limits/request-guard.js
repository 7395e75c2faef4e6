// Only the person at the keyboard drives the lab: the guard runs first on every request and checks the
// Host, cross-site requests and the write rules. Why each, and what changes state: README.md.
import { timingSafeEqual } from 'node:crypto'
import net from 'node:net'
import { hostMissing, hostNotAllowed, crossSiteRefused, internalError, tokenRequired } from '../errors/index.js'
import { RUN_KEY_HEADER } from './run-keys.js'

/** The cookie that opening `/?token=...` sets. */
const TOKEN_COOKIE = 'streamlab_token'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
/** Where the guard leaves its write rules on a request, for the route's `writes()` marker. */
const WRITE_RULES = Symbol('streamlab.writeRules')

/**
 * The guard's options, frozen. allowedHosts: names, `.example` for a domain and its subdomains, or `all`;
 * exemptLoopback: requests from this machine need no token (the Host and cross-site checks still apply).
 */
export function normalizeGuardOptions ({ allowedHosts = [], boundHost = null, accessToken = null, exemptLoopback = true } = {}) {
  if (!Array.isArray(allowedHosts) || !allowedHosts.every(function isName (h) { return typeof h === 'string' && h.trim() !== '' })) {
    throw new TypeError('option allowedHosts must be an array of host names')
  }
  if (boundHost !== null && typeof boundHost !== 'string') throw new TypeError('option boundHost must be an address or null')
  if (accessToken !== null && (typeof accessToken !== 'string' || accessToken.length < 16)) {
    throw new TypeError('option accessToken must be null or a string of at least 16 characters')
  }
  if (typeof exemptLoopback !== 'boolean') throw new TypeError('option exemptLoopback must be a boolean')
  const names = allowedHosts.map(function lower (h) { return h.trim().toLowerCase().replace(/\.$/, '') })
  return Object.freeze({
    allowedHosts: Object.freeze(names.filter(function notAll (h) { return h !== 'all' })),
    anyHost: names.includes('all'),
    boundHost: boundHost === null ? null : boundHost.toLowerCase(),
    accessToken,
    exemptLoopback
  })
}

/** The host name of a Host (or Origin authority) without its port (`[::1]:3000` -> `::1`); null if unreadable. */
function hostName (authority) {
  const text = String(authority).trim().toLowerCase()
  if (text === '') return null
  let name
  if (text.startsWith('[')) {
    const end = text.indexOf(']')
    if (end === -1) return null
    name = text.slice(1, end)
    const rest = text.slice(end + 1)
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return null
    return net.isIPv6(name) ? name : null
  }
  const colon = text.lastIndexOf(':')
  if (colon !== -1) {
    if (!/^\d{1,5}$/.test(text.slice(colon + 1))) return null
    name = text.slice(0, colon)
  } else {
    name = text
  }
  name = name.replace(/\.$/, '')
  return /^[a-z0-9.-]+$/.test(name) ? name : null
}

function hostAllowed (name, guard) {
  if (guard.anyHost) return true
  // an IP address cannot be rebound: a page that uses one is on that address
  if (net.isIP(name) !== 0) return true
  if (name === 'localhost' || name.endsWith('.localhost')) return true
  if (guard.boundHost !== null && name === guard.boundHost) return true
  for (const allowed of guard.allowedHosts) {
    if (allowed.startsWith('.') ? (name === allowed.slice(1) || name.endsWith(allowed)) : name === allowed) return true
  }
  return false
}

/** Every method but GET, HEAD and OPTIONS changes state; a GET that writes says so with `writes()`. */
function changesState (req) {
  return !SAFE_METHODS.has(req.method)
}

function everyRequest () {
  return true
}

/**
 * Marks a route as changing state; put it first (`router.get('/db/batch', writes(), exportBatch)`). For the
 * requests `when` picks it applies the write rules to what the router gives this route, however the path is
 * spelled. It fails closed: without the app-level guard before it, 500 rather than an unguarded write.
 */
export function writes (when = everyRequest) {
  if (typeof when !== 'function') throw new TypeError('writes(when): when must be a function of the request')
  function guardWrite (req, res, next) {
    if (!when(req)) {
      next()
      return
    }
    const refusedWrite = req[WRITE_RULES]
    if (typeof refusedWrite !== 'function') {
      next(internalError('a route that writes is mounted without the request guard before it'))
      return
    }
    const refusal = refusedWrite(req)
    if (refusal === null) next()
    else next(refusal)
  }
  return guardWrite
}

/** The request's path with leading slashes and backslashes collapsed to one `/`: `//evil.example/` stays here. */
function landingPath (path) {
  return `/${String(path).replace(/^[/\\]+/, '')}`
}

/** The peer is this machine. */
function fromLoopback (req) {
  const address = req.socket?.remoteAddress ?? ''
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.')
}

function readCookie (header, name) {
  for (const part of String(header ?? '').split(';')) {
    const at = part.indexOf('=')
    if (at !== -1 && part.slice(0, at).trim() === name) return decodeURIComponent(part.slice(at + 1).trim())
  }
  return null
}

function sameToken (given, token) {
  if (typeof given !== 'string') return false
  const a = Buffer.from(given)
  const b = Buffer.from(token)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** The token a request carries, by header or cookie. */
function presentedToken (req) {
  const auth = req.headers.authorization
  if (typeof auth === 'string' && /^bearer /i.test(auth)) return auth.slice(7).trim()
  return req.headers['x-streamlab-token'] ?? readCookie(req.headers.cookie, TOKEN_COOKIE)
}

/** `host:port` of an Origin header, lower case; null for `null` or anything unreadable. */
function originAuthority (origin) {
  if (origin === 'null') return null
  try {
    return new URL(origin).host.toLowerCase()
  } catch {
    return null
  }
}

/** Where the browser says the request comes from: `Sec-Fetch-Site`, else an Origin not the lab's own. */
function browserContext (req) {
  const site = typeof req.headers['sec-fetch-site'] === 'string' ? req.headers['sec-fetch-site'] : null
  const origin = typeof req.headers.origin === 'string' ? req.headers.origin : null
  // the lab's own page has the origin of the Host it was loaded from; `null` (a sandbox, a file) is foreign
  const authority = origin === null ? null : originAuthority(origin)
  const foreignOrigin = origin !== null && (authority === null || authority !== String(req.headers.host ?? '').toLowerCase())
  return { site, origin, foreign: site === 'cross-site' || site === 'same-site' || foreignOrigin }
}

/**
 * The guard as Express middleware; mount it first. It applies the write rules to every request that changes
 * state by its method and leaves them on the request for `writes()`. A live key of `runKeys` opens the lab
 * as the token does (the experiments' own load).
 */
export function requestGuard (guard, runKeys = null) {
  /** Why this write may not happen (a LabError), or null when it may. */
  function refusedWrite (req) {
    const from = browserContext(req)
    if (from.foreign) return crossSiteRefused(req.method, req.path, from.site, from.origin)
    if (guard.accessToken === null || (guard.exemptLoopback && fromLoopback(req))) return null
    const given = presentedToken(req)
    if (sameToken(given, guard.accessToken)) return null
    const runKey = req.headers[RUN_KEY_HEADER]
    if (runKey !== undefined) return runKeys !== null && runKeys.holds(runKey) ? null : tokenRequired(true)
    return tokenRequired(given !== null && given !== undefined)
  }

  return function guardRequest (req, res, next) {
    const host = req.headers.host
    if (host === undefined || host === '') {
      // HTTP/1.0 may omit it (no browser does); HTTP/1.1 must send it
      if (req.httpVersionMajor > 1 || (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1)) {
        next(hostMissing())
        return
      }
    } else {
      const name = hostName(host)
      if (name === null || !hostAllowed(name, guard)) {
        next(hostNotAllowed(String(host).slice(0, 200), guard.allowedHosts))
        return
      }
    }

    const from = browserContext(req)
    if (from.site === 'cross-site' || from.site === 'same-site') {
      // a link from elsewhere may open a page; nothing else crosses sites (a link that would write is the write rules')
      const navigation = req.headers['sec-fetch-mode'] === 'navigate' && SAFE_METHODS.has(req.method)
      if (!navigation) {
        next(crossSiteRefused(req.method, req.path, from.site, from.origin))
        return
      }
    }

    req[WRITE_RULES] = refusedWrite
    if (guard.accessToken !== null) {
      const offered = req.method === 'GET' ? req.query.token : undefined
      if (typeof offered === 'string') {
        // the printed URL: trade the token for a cookie, then show the page without it
        if (!sameToken(offered, guard.accessToken)) {
          next(tokenRequired(true))
          return
        }
        const params = new URLSearchParams(req.query)
        params.delete('token')
        const rest = params.toString()
        res.cookie(TOKEN_COOKIE, guard.accessToken, { httpOnly: true, sameSite: 'strict', path: '/' })
        res.redirect(303, `${landingPath(req.path)}${rest ? `?${rest}` : ''}`)
        return
      }
    }
    const refusal = changesState(req) ? refusedWrite(req) : null
    if (refusal === null) next()
    else next(refusal)
  }
}
