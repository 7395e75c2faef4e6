// Whole numbers from outside, checked one way: a client's parameter (400 parameter.invalid, named as the
// client named it) and a caller's option (a TypeError, as every option normaliser throws).
import { badParameter } from '../errors/index.js'

/** At most 16 digits: every integer up to Number.MAX_SAFE_INTEGER, and nothing longer to convert. */
const DIGITS = /^\d{1,16}$/

/**
 * An integer parameter from `min` to `max`, as a string of digits (a query string) or a number (a JSON body):
 * no sign, no decimals, no exponent. 400 parameter.invalid names `name` as the client did (`params.concurrency`).
 */
export function integerParam (name, value, min, max, allowed = `an integer from ${min} to ${max}`) {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value
  if (typeof text !== 'string' || !DIGITS.test(text)) throw badParameter(name, value, allowed)
  const number = Number(text)
  if (number < min || number > max) throw badParameter(name, value, allowed)
  return number
}

/** `check(name, value, min, max)`: the value, or a TypeError naming it after `prefix` (`server option `). */
export function integerOptions (prefix) {
  return function checkIntegerOption (name, value, min, max) {
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      throw new TypeError(`${prefix}${name} must be an integer from ${min} to ${max}, got ${value}`)
    }
    return value
  }
}
