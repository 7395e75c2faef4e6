// GET /: the dashboard, a static page that draws GET /metrics live and drives /experiments. Chart.js is served
// from node_modules (a classroom projector often has no internet); the lib/ modules the page imports at /lib/...
// (lib/runs/page-modules.js); GET /run-page.html, the empty page a run is exported into. No inline script or
// style, so the Content-Security-Policy allows 'self' alone.
import path from 'node:path'
import express from 'express'
import { chartJsFile } from '../lib/util/assets.js'
import { PROJECT_ROOT } from '../lib/config/options.js'
import { sharedModules } from '../lib/runs/page-modules.js'
import { RUN_PAGE_ENTRY, runPageTemplate } from '../lib/runs/run-page.js'

/** Where the page's files live. */
const DASHBOARD_DIR = path.join(PROJECT_ROOT, 'dashboard')
/** The pages' entry modules: what they import of lib/ is all of lib/ the route serves. */
const PAGE_ENTRIES = Object.freeze(['/main.js', RUN_PAGE_ENTRY])

/** The headers every dashboard response carries. */
const SECURITY_HEADERS = Object.freeze({
  'Content-Security-Policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    // Chart.js exports the chart as a data: URL; the page never loads images from elsewhere
    "img-src 'self' data: blob:",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'"
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  // a teacher who edits the page wants the edit on the next reload, not a cached copy
  'Cache-Control': 'no-cache'
})

/** The dashboard router; mount it after the API routes (its static files answer only what nothing else did). */
export function dashboardRoutes (settings = {}) {
  const dir = settings.dir ?? DASHBOARD_DIR
  const chartJs = settings.chartJs ?? chartJsFile()
  const router = express.Router({ caseSensitive: true, strict: true })

  router.get('/vendor/chart.umd.js', function sendChartJs (req, res, next) {
    res.set(SECURITY_HEADERS)
    res.sendFile(chartJs, { headers: { 'Content-Type': 'text/javascript; charset=utf-8' } }, function sent (err) {
      if (err) next(err)
    })
  })

  // middleware, not a route: a lib/ file the page does not import is a 404, as a missing static file is.
  // Read again on each request, as the static files are: an edit shows on the next reload
  router.use('/lib', function sendSharedModule (req, res, next) {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next()
    const file = sharedModules(PAGE_ENTRIES, { dashboardDir: dir }).get(`/lib${req.path}`)
    if (file === undefined) return next()
    res.set(SECURITY_HEADERS)
    res.sendFile(file, { headers: { 'Content-Type': 'text/javascript; charset=utf-8' } }, function sent (err) {
      if (err) next(err)
    })
  })

  router.get('/run-page.html', function sendRunPageTemplate (req, res) {
    // its own policy is in its meta tag; the header's is the dashboard's, as for every file here
    res.set(SECURITY_HEADERS).type('html').send(runPageTemplate({ dashboardDir: dir, chartJs }))
  })

  router.use(express.static(dir, {
    index: 'index.html',
    redirect: false,
    setHeaders: function setSecurityHeaders (res) { res.set(SECURITY_HEADERS) }
  }))

  return router
}
