/**
 * Every error the lab sends is made here: an HTTP status, a dotted `type`
 * and the figures that explain it. The Express error handler
 * (`lib/http/send-error.js`) turns them into JSON; `docs/errors.md` lists them all, and
 * `ERROR_CATALOGUE` is the same list as data. Import them from this module;
 * they live by concern under lib/errors/:
 *
 *   lab-error.js  LabError and createError (only the factories call it)
 *   body.js       a request's body: sizes, media types, gzip, JSON, records, slow bodies
 *   capacity.js   the lab is full or going: requests, connections, memory, disk, closing
 *   http.js       the request as HTTP: parameters, routes, negotiation, the guard, the parser; toLabError
 *   services.js   uploads, experiment runs, the database
 *   catalogue.js  ERROR_CATALOGUE and ERROR_MAPPERS
 *
 * A new factory goes in the file of its concern, with its entry in the
 * catalogue and its row in docs/errors.md (test/errors-catalogue.test.js
 * holds the three together).
 */
export * from './lab-error.js'
export * from './body.js'
export * from './capacity.js'
export * from './http.js'
export * from './services.js'
export * from './catalogue.js'
