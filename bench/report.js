/**
 * Benchmark reports: results.json (everything), results.md (the table) and
 * report.html (Chart.js charts). The HTML works offline: Chart.js is copied
 * from node_modules beside it, never loaded from a CDN.
 */
import fs from 'node:fs'
import path from 'node:path'
import { chartJsFile } from '../lib/assets.js'

const CHART_JS = chartJsFile()

// Okabe-Ito: distinguishable with the common colour-vision deficiencies
const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#F0E442', '#000000']

function escapeHtml (text) {
  return String(text).replace(/[&<>"']/g, function escapeChar (c) {
    return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]
  })
}

/**
 * @typedef {{ title: string, x: string, y: string, logX?: boolean,
 *   series: Array<{ label: string, points: Array<{ x: number, y: number|null }> }> }} ChartSpec
 */

/**
 * Write the three report files.
 * @param {string} dir
 * @param {{ title: string, command: string, meta: object, markdown: string, charts: ChartSpec[], data: object }} report
 * @returns {Promise<string[]>} the files written
 */
export async function writeReport (dir, report) {
  await fs.promises.mkdir(dir, { recursive: true })
  const files = {
    json: path.join(dir, 'results.json'),
    md: path.join(dir, 'results.md'),
    html: path.join(dir, 'report.html'),
    chart: path.join(dir, 'chart.umd.js')
  }
  await fs.promises.writeFile(files.json, JSON.stringify({ ...report.meta, command: report.command, ...report.data }, null, 2) + '\n')
  await fs.promises.writeFile(files.md, `# ${report.title}\n\n${report.meta.started}, Node ${report.meta.node}, \`${report.command}\`\n\n${report.markdown}`)
  await fs.promises.copyFile(CHART_JS, files.chart)
  await fs.promises.writeFile(files.html, renderHtml(report))
  return [files.json, files.md, files.html]
}

function renderHtml (report) {
  const charts = report.charts.map(function withColours (chart) {
    return {
      ...chart,
      series: chart.series.map(function colour (s, k) { return { ...s, colour: PALETTE[k % PALETTE.length] } })
    }
  })
  // </script> inside JSON would end the script element early
  const data = JSON.stringify(charts).replace(/</g, '\\u003c')
  const canvases = charts.map(function canvas (chart, k) {
    return `<figure><canvas id="chart-${k}" role="img" aria-label="${escapeHtml(chart.title)}"></canvas><figcaption>${escapeHtml(chart.title)}</figcaption></figure>`
  }).join('\n')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(report.title)}</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; padding: 0 1rem; color: #111; }
  .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(30rem, 1fr)); gap: 1.5rem; }
  figure { margin: 0; } figcaption { text-align: center; font-weight: 600; }
  pre { background: #f4f4f4; padding: 1rem; overflow-x: auto; }
  code { font-size: 0.95em; }
</style>
</head>
<body>
<h1>${escapeHtml(report.title)}</h1>
<p>${escapeHtml(report.meta.started)}, Node ${escapeHtml(report.meta.node)}: <code>${escapeHtml(report.command)}</code></p>
<div class="charts">
${canvases}
</div>
<h2>Table</h2>
<pre>${escapeHtml(report.markdown)}</pre>
<script src="chart.umd.js"></script>
<script>
const charts = ${data}
charts.forEach(function draw (chart, k) {
  new Chart(document.getElementById('chart-' + k), {
    type: 'line',
    data: {
      datasets: chart.series.map(function dataset (s) {
        return { label: s.label, data: s.points, borderColor: s.colour, backgroundColor: s.colour, pointRadius: 4, tension: 0 }
      })
    },
    options: {
      animation: false,
      parsing: false,
      scales: {
        x: { type: chart.logX ? 'logarithmic' : 'linear', title: { display: true, text: chart.x } },
        y: { beginAtZero: true, title: { display: true, text: chart.y } }
      }
    }
  })
})
</script>
</body>
</html>
`
}
