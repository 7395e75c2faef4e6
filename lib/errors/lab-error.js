// The one error class the lab sends, and `createError`, which only the factories under lib/errors/ call
// (test/errors-catalogue.test.js fails on a call anywhere else).

/** Error with an HTTP status, a dotted type and explanatory figures. */
export class LabError extends Error {
  /** `details`: the figures that explain the error (limit, received, offset ...). */
  constructor (status, type, message, details = {}) {
    super(message)
    this.name = 'LabError'
    this.status = status
    this.statusCode = status
    this.type = type
    this.expose = true
    this.details = details
    /** Response headers that belong to the error (Allow, Retry-After). */
    this.headers = {}
  }

  /** The JSON body sent to the client. */
  toJSON () {
    return { error: { status: this.status, type: this.type, message: this.message, ...this.details } }
  }
}

/**
 * Build a LabError. For the factories below: everything else asks a factory, so that every
 * type the lab sends is in the catalogue (lib/errors/catalogue.js; test/errors-catalogue.test.js
 * fails on a call outside lib/errors/).
 */
export function createError (status, type, message, details) {
  return new LabError(status, type, message, details)
}
