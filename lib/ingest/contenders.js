/**
 * The ingest routes the experiment and the bench compare, each sent the same gzip file: /bad, /good
 * and /streamparser-json as gzip, /express-json as JSON with Content-Encoding (the same bytes on the
 * wire, the same summaries). NDJSON is not one JSON document: express.json and the textbook route do not read it.
 */
import { FORMATS } from '../json/records.js'
import { EXPRESS_JSON_FORMATS } from './negotiate.js'
import { STREAMPARSER_FORMATS } from './token-guard.js'

export const INGEST_ROUTES = Object.freeze({
  bad: Object.freeze({
    label: 'buffered',
    headers: Object.freeze({ 'content-type': 'application/gzip' }),
    formats: FORMATS
  }),
  good: Object.freeze({
    label: 'streamed',
    headers: Object.freeze({ 'content-type': 'application/gzip' }),
    formats: FORMATS
  }),
  'express-json': Object.freeze({
    label: 'express.json',
    headers: Object.freeze({ 'content-type': 'application/json', 'content-encoding': 'gzip' }),
    formats: EXPRESS_JSON_FORMATS
  }),
  'streamparser-json': Object.freeze({
    label: '@streamparser/json',
    headers: Object.freeze({ 'content-type': 'application/gzip' }),
    formats: STREAMPARSER_FORMATS
  })
})

/** Route names, in the order runs and tables show them. */
export const INGEST_ROUTE_NAMES = Object.freeze(Object.keys(INGEST_ROUTES))

/** The routes of a list that cannot read `format`, for the error that says so. */
export function routesRefusing (routes, format) {
  return routes.filter(function refuses (route) { return !INGEST_ROUTES[route].formats.includes(format) })
}
