/**
 * GET /: the dashboard, a static page (dashboard/) that draws GET /metrics
 * live and drives /experiments. Chart.js comes from node_modules at
 * /vendor/chart.umd.js: a classroom projector often has no internet, so
 * never from a CDN.
 *
 * The page has no inline script or style, so its Content-Security-Policy
 * can allow 'self' and nothing else.
 */
import path from 'node:path'
import express from 'express'
import { chartJsFile } from '../lib/util/assets.js'
import { PROJECT_ROOT } from '../lib/config/options.js'

/** Where the page's files live. */
const DASHBOARD_DIR = path.join(PROJECT_ROOT, 'dashboard')

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

/**
 * The dashboard router. Mount it after the API routes: its static files
 * answer only what nothing else did.
 * @param {{ dir?: string, chartJs?: string }} [settings] where the page and Chart.js are (tests may point elsewhere)
 * @returns {import('express').Router}
 */
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

  router.use(express.static(dir, {
    index: 'index.html',
    redirect: false,
    setHeaders: function setSecurityHeaders (res) { res.set(SECURITY_HEADERS) }
  }))

  return router
}
