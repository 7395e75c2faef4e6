/** Which URLs the grader may load: http:// on a loopback address, another only when the caller allows it. */
import { isIP } from 'node:net'

/** Whether `url` may be loaded without --allow-remote: a loopback address (127.0.0.0/8, ::1) or `localhost`. */
export function classifyUrl (url) {
  let parsed
  try {
    parsed = new URL(url)
  } catch {
    return { ok: false, url: null, loopback: false, port: null, problem: `not a URL: ${url}` }
  }
  const problem = `only http:// URLs are graded, got ${parsed.protocol}//`
  if (parsed.protocol !== 'http:') return { ok: false, url: parsed, loopback: false, port: null, problem }
  const port = parsed.port === '' ? 80 : Number(parsed.port)
  return { ok: true, url: parsed, loopback: isLoopback(parsed.hostname), port, problem: null }
}

/** Why a URL that is not loopback is refused, and how to grade it anyway. */
export function remoteRefusal (url) {
  return `${url.href} is not a loopback address (127.0.0.0/8, ::1, localhost): the lab aims zip bombs and bounded but heavy load at it. ` +
    `Give --allow-remote to grade a service on another machine you are allowed to load (its memory cannot be read from here)`
}

/** `hostname` as URL gives it (`[::1]` with its brackets). */
function isLoopback (hostname) {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (host === 'localhost' || host.endsWith('.localhost')) return true
  if (isIP(host) === 4) return host.startsWith('127.')
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./.test(host) || /^(0+:){7}0*1$/.test(host)
  return false
}
