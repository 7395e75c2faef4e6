/**
 * Which URLs the grader may aim its load at: an http:// URL on a loopback
 * address, or another one only when the caller says it may be loaded.
 */
import { isIP } from 'node:net'

/**
 * Whether `url` is one the grader may aim its load at without --allow-remote:
 * a loopback address (127.0.0.0/8, ::1) or `localhost`.
 * @param {string} url
 * @returns {{ ok: boolean, url: URL|null, loopback: boolean, port: number|null, problem: string|null }}
 */
export function classifyUrl (url) {
  let parsed
  try {
    parsed = new URL(url)
  } catch {
    return { ok: false, url: null, loopback: false, port: null, problem: `not a URL: ${url}` }
  }
  if (parsed.protocol !== 'http:') return { ok: false, url: parsed, loopback: false, port: null, problem: `only http:// URLs are graded, got ${parsed.protocol}//` }
  const port = parsed.port === '' ? 80 : Number(parsed.port)
  return { ok: true, url: parsed, loopback: isLoopback(parsed.hostname), port, problem: null }
}

/**
 * Why a URL that is not loopback is refused, and how to grade it anyway.
 * @param {URL} url
 * @returns {string}
 */
export function remoteRefusal (url) {
  return `${url.href} is not a loopback address (127.0.0.0/8, ::1, localhost): the lab aims zip bombs and bounded but heavy load at it. Give --allow-remote to grade a service on another machine you are allowed to load (its memory cannot be read from here)`
}

/**
 * @param {string} hostname as URL gives it (`[::1]` with its brackets)
 * @returns {boolean}
 */
function isLoopback (hostname) {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (host === 'localhost' || host.endsWith('.localhost')) return true
  if (isIP(host) === 4) return host.startsWith('127.')
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./.test(host) || /^(0+:){7}0*1$/.test(host)
  return false
}
