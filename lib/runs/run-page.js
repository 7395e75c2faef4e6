/**
 * One run as one HTML file that opens from disk with no server and no network (docs/runs.md, "One page per run"): Chart.js, the
 * dashboard's stylesheet and the page's modules inlined (page-modules.js bundles them: a page opened from disk can load no module
 * file), and the record as data (run-page-data.js). The template is the page with no run in it; the dashboard fetches it (GET
 * /run-page.html) to export a run it holds, the CLI fills it itself. More: README.md, "run-page.js".
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { chartJsFile } from '../util/assets.js'
import { DASHBOARD_DIR, bundleModules } from './page-modules.js'
import { embedRecord, emptyRecordElement } from './run-page-data.js'

export const RUN_PAGE_ENTRY = '/run-page.js'

/** A CSP source for a text's SHA-256. */
function hashSource (text) {
  return `'sha256-${crypto.createHash('sha256').update(text, 'utf8').digest('base64')}'`
}

/**
 * Text inlined in an element must not end it early (`</script`), nor start what would change how the rest is read (`<!--`,
 * `<script` inside a script).
 */
function inlinable (name, text, tag) {
  const found = new RegExp(`</${tag}|<!--|<script`, 'i').exec(text)
  if (found !== null) throw new Error(`${name} holds "${found[0]}": it cannot be inlined in a run page`)
  return text
}

/** The Content-Security-Policy of a page with these inline scripts and stylesheet. */
export function runPagePolicy (scripts, style) {
  return [
    "default-src 'none'",
    `script-src ${scripts.map(hashSource).join(' ')}`,
    `style-src ${hashSource(style)}`,
    "base-uri 'none'",
    "form-action 'none'"
  ].join('; ')
}

/** The run page with no run in it (`where`: the page's folder and Chart.js, for specs); throws when a part cannot be inlined. */
export function runPageTemplate ({ dashboardDir = DASHBOARD_DIR, chartJs = chartJsFile() } = {}) {
  const chart = inlinable('Chart.js', fs.readFileSync(chartJs, 'utf8'), 'script')
  const bundle = inlinable('the page\'s modules', bundleModules(RUN_PAGE_ENTRY, { dashboardDir }), 'script')
  const css = inlinable('dashboard.css', fs.readFileSync(path.join(dashboardDir, 'dashboard.css'), 'utf8'), 'style')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${runPagePolicy([chart, bundle], css)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>streamlab: a recorded run</title>
<style>${css}</style>
</head>
<body class="run-page">
<header class="bar">
<h1>streamlab <span class="subtitle">a recorded run, drawn from this file alone</span></h1>
<div class="view-controls"><button id="projector" type="button" aria-pressed="false"
 title="Large type and high contrast, for the back of the room">Projector mode</button></div>
</header>
<main class="run-page-main">
<p id="run-page-message" class="message" role="alert" data-kind="error" hidden></p>
<section id="run-view" class="replay" aria-label="The recorded run"></section>
</main>
${emptyRecordElement()}
<script>${chart}</script>
<script>${bundle}</script>
</body>
</html>
`
}

/** A checked record's page. */
export function runPage (record, where = {}) {
  return embedRecord(runPageTemplate(where), record)
}
