/**
 * Every route the lab serves, found by walking the app's router (no list of
 * routes here), in every spelling a client could try: upper case, mixed case,
 * a trailing slash, a percent-encoded letter, doubled slashes. A route that
 * changes state (by its method, or marked with `writes()` where it is declared)
 * is either refused to another web page and to a tokenless client beyond
 * loopback, or not served at all under that spelling; never answered 2xx.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { writes } from '../lib/limits/request-guard.js'
import { labInTempDir } from './helpers.js'

const TOKEN = 'a-token-of-at-least-16-characters'
/** The lab mounts more routes than this; a walk that finds fewer has lost its way in the router. */
const ROUTES_AT_LEAST = 20
const SAFE_METHODS = new Set(['get', 'head', 'options'])
/**
 * The query that makes a GET route marked `writes()` write. Only these: the walk
 * finds the routes, and a marked route missing here fails the spec.
 */
const WRITING_QUERIES = Object.freeze({
  '/generate': 'save=1&size=10',
  '/db/batch': 'limit=1',
  '/db/stream': 'limit=1'
})
/** The name of the handler `writes()` puts first in a route's declaration: how the walk tells a marked route. */
const WRITE_MARKER = writes().name
/** What a path parameter is spelled with in the requests. */
const SAMPLE_PARAM = 'spec-sample'

/**
 * Every route of a router stack, nested routers included: `{ path, methods, marked }`.
 * @param {object[]} stack a router's `stack` (Express 5: `app.router.stack`)
 * @param {string} prefix where this stack is mounted
 * @param {object[]} routers every router met, for the strictness check
 */
function walkRoutes (stack, prefix = '', routers = []) {
  const routes = []
  for (const layer of stack) {
    if (layer.route) {
      const path = layer.route.path
      if (typeof path !== 'string') throw new Error(`the walk cannot spell the route ${String(path)}: give it a string path`)
      routes.push({
        path: `${prefix}${path}`,
        methods: Object.keys(layer.route.methods).filter(function declared (m) { return layer.route.methods[m] }),
        marked: layer.route.stack.some(function isMarker (l) { return l.handle.name === WRITE_MARKER })
      })
    } else if (Array.isArray(layer.handle?.stack)) {
      routers.push(layer.handle)
      routes.push(...walkRoutes(layer.handle.stack, `${prefix}${mountPath(layer)}`, routers))
    }
  }
  return routes
}

/** The path a router is mounted at, '' for the root. */
function mountPath (layer) {
  const at = layer.rawPath ?? '/'
  if (typeof at !== 'string') throw new Error(`the walk cannot follow a router mounted at ${String(at)}`)
  return at === '/' ? '' : at
}

/** A route's path as a request spells it: parameters get a sample value. */
function concretePath (path) {
  if (/[*{}()?+]/.test(path)) throw new Error(`the walk cannot spell ${path}: teach concretePath its syntax`)
  return path.replace(/:\w+/g, SAMPLE_PARAM)
}

/** The spellings a client could try for `path`, the route's own first. */
function spellings (path) {
  const variants = [
    ['as declared', path],
    ['upper case', path.toUpperCase()],
    ['mixed case', path.replace(/\/([a-z])/g, function capital (m, letter) { return `/${letter.toUpperCase()}` })],
    ['trailing slash', `${path}/`],
    ['double leading slash', `/${path}`]
  ]
  const letter = path.search(/[a-z]/i)
  if (letter !== -1) {
    const code = path.charCodeAt(letter).toString(16).toUpperCase()
    variants.push(['percent-encoded letter', `${path.slice(0, letter)}%${code}${path.slice(letter + 1)}`])
  }
  const inner = path.indexOf('/', 1)
  if (inner !== -1) variants.push(['double inner slash', `${path.slice(0, inner)}/${path.slice(inner)}`])
  return variants.filter(function differs (variant, index) { return index === 0 || variant[1] !== path })
}

/**
 * Every state-changing request the walk finds: the route, the method, the query that
 * makes it write. A GET route writes when it is marked, and when the table says it
 * does: a marker taken off its declaration must not take the route out of the spec.
 */
function writingRequests (routes) {
  const requests = []
  for (const route of routes) {
    const writesByQuery = route.marked || Object.hasOwn(WRITING_QUERIES, route.path)
    for (const method of route.methods) {
      if (SAFE_METHODS.has(method) && !writesByQuery) continue
      const query = SAFE_METHODS.has(method) ? WRITING_QUERIES[route.path] : ''
      if (query === undefined) throw new Error(`${route.path} is marked writes() but has no entry in WRITING_QUERIES`)
      requests.push({ route: route.path, method: method.toUpperCase(), path: concretePath(route.path), query })
    }
  }
  return requests
}

/** One request with exactly these headers; the answer's JSON body when it has one. */
function send (port, { method, path, headers = {} }) {
  return new Promise(function ask (resolve, reject) {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { ...headers, 'content-length': 0 } }, function answer (res) {
      const parts = []
      res.on('data', function keep (c) { parts.push(c) })
      res.on('end', function done () {
        let body = null
        try { body = JSON.parse(Buffer.concat(parts).toString('utf8')) } catch { /* not JSON */ }
        resolve({ status: res.statusCode, body })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

/**
 * Send every writing request in every spelling; return what broke the rule.
 * @param {number} port
 * @param {object[]} requests from writingRequests()
 * @param {object} headers sent with each
 * @param {{ refusal: number, type: string }} expected the refusal the route's own spelling must get
 */
async function tryEverySpelling (port, requests, headers, expected) {
  const broken = []
  for (const { route, method, path, query } of requests) {
    for (const [spelling, spelled] of spellings(path)) {
      const target = `${spelled}${query ? `?${query}` : ''}`
      const res = await send(port, { method, path: target, headers: headers(method) })
      const what = `${method} ${target} (${route}, ${spelling}) answered ${res.status} ${res.body?.error?.type ?? ''}`
      const refused = res.status === expected.refusal && (method === 'HEAD' || res.body?.error?.type === expected.type)
      const unserved = res.status === 404 && (method === 'HEAD' || res.body?.error?.type === 'route.not.found')
      // the route's own spelling must reach the guard; another may also be a path the lab does not serve
      if (spelling === 'as declared' ? !refused : !(refused || unserved)) broken.push(what)
    }
  }
  return broken
}

describe('the routes the lab mounts, as the router declares them', function () {
  const lab = labInTempDir('route-walk')

  it(`walks the app's router and finds at least ${ROUTES_AT_LEAST} routes, nested routers included`, function () {
    const routes = walkRoutes(lab.app.router.stack)
    assert.ok(routes.length >= ROUTES_AT_LEAST, `found ${routes.length}: ${routes.map(function name (r) { return r.path }).join(' ')}`)
    for (const path of ['/generate', '/good', '/experiments/:id', '/db/batch']) {
      assert.ok(routes.some(function isIt (r) { return r.path === path }), `${path} is found`)
    }
  })

  it('serves every path only as its route spells it: every router is case-sensitive and strict', function () {
    const routers = []
    walkRoutes(lab.app.router.stack, '', routers)
    assert.ok(routers.length > 0)
    for (const router of [lab.app.router, ...routers]) {
      assert.equal(router.caseSensitive, true, 'caseSensitive: true')
      assert.equal(router.strict, true, 'strict: true')
    }
  })

  it('has the query that makes it write for every GET route marked writes(), and nothing else', function () {
    const marked = walkRoutes(lab.app.router.stack)
      .filter(function isMarkedRead (r) { return r.marked && r.methods.some(function safe (m) { return SAFE_METHODS.has(m) }) })
      .map(function path (r) { return r.path })
    assert.deepEqual(marked.sort(), Object.keys(WRITING_QUERIES).sort())
  })
})

describe('every state-changing route, in every spelling, from another web page', function () {
  const lab = labInTempDir('route-cross-site')

  it('answers 403 request.cross.site, or 404 where the spelling is not served; never 2xx', async function () {
    this.timeout(60000)
    const requests = writingRequests(walkRoutes(lab.app.router.stack))
    assert.ok(requests.length >= 10, `${requests.length} state-changing requests`)
    function crossSite (method) {
      // a link (navigation) for the safe methods, which the guard would let open a page that changes nothing
      return SAFE_METHODS.has(method.toLowerCase())
        ? { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'iframe' }
        : { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'empty' }
    }
    const broken = await tryEverySpelling(lab.port, requests, crossSite, { refusal: 403, type: 'request.cross.site' })
    assert.deepEqual(broken, [])
  })
})

describe('every state-changing route, in every spelling, from another machine without the token', function () {
  // exemptLoopback false: the spec's own loopback requests are treated as another machine's
  const lab = labInTempDir('route-token', { guard: { accessToken: TOKEN, exemptLoopback: false } })

  it('answers 401 token.required, or 404 where the spelling is not served; never 2xx', async function () {
    this.timeout(60000)
    const requests = writingRequests(walkRoutes(lab.app.router.stack))
    const withHead = requests.flatMap(function alsoHead (r) { return r.method === 'GET' ? [r, { ...r, method: 'HEAD' }] : [r] })
    function noToken () { return {} }
    const broken = await tryEverySpelling(lab.port, withHead, noToken, { refusal: 401, type: 'token.required' })
    assert.deepEqual(broken, [])
  })
})
