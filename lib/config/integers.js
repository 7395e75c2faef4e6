/**
 * Whole numbers from outside, checked one way wherever they come in: a parameter a client
 * sent (a query string or a JSON body: 400 parameter.invalid, named as the client named it) and
 * an option a caller gave (a TypeError, as every option normaliser throws).
 */
import { badParameter } from '../errors/index.js'

/** At most 16 digits: every integer up to Number.MAX_SAFE_INTEGER, and nothing longer to convert. */
const DIGITS = /^\d{1,16}$/

/**
 * An integer parameter from `min` to `max`, given as a string of digits (a query string) or as a
 * number (a JSON body, or a caller that has one already). No sign, no decimals, no exponent.
 * @param {string} name the parameter as the client named it (`size`, `params.concurrency`)
 * @param {unknown} value what the client sent
 * @param {string} [allowed] what the error says is allowed
 * @throws {import('../errors/index.js').LabError} 400 parameter.invalid naming `name`
 */
export function integerParam (name, value, min, max, allowed = `an integer from ${min} to ${max}`) {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value
  if (typeof text !== 'string' || !DIGITS.test(text)) throw badParameter(name, value, allowed)
  const number = Number(text)
  if (number < min || number > max) throw badParameter(name, value, allowed)
  return number
}

/**
 * The checker of one normaliser's integer options: `checkIntegerOption(name, value, min, max)`
 * returns the value, or throws a TypeError naming it after `prefix` ("server option " +
 * "maxConnections must be an integer from 1 to 1000000, got 0").
 * @param {string} prefix e.g. `option `, `server option `, `option database.`
 */
export function integerOptions (prefix) {
  return function checkIntegerOption (name, value, min, max) {
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      throw new TypeError(`${prefix}${name} must be an integer from ${min} to ${max}, got ${value}`)
    }
    return value
  }
}
