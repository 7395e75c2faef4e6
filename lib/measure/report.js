// Benchmark reports: results.json, results.md, report.html (Chart.js, copied beside it: it works offline)
// and each chart as an SVG the docs can show.
import fs from 'node:fs'
import path from 'node:path'
import { chartJsFile } from '../util/assets.js'
import { htmlText } from '../util/escape.js'

const CHART_JS = chartJsFile()

// Okabe-Ito: distinguishable with the common colour-vision deficiencies
const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#F0E442', '#000000']

/** @typedef {import('../experiments/result-contract.js').ChartSpec} ChartSpec the chart shape, defined by the result contract */

/**
 * Write the report files: results.json, results.md, report.html, and an SVG per chart.
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
  const heading = `# ${report.title}\n\n${report.meta.started}, Node ${report.meta.node}, \`${report.command}\``
  await fs.promises.writeFile(files.md, `${heading}\n\n${report.markdown}`)
  await fs.promises.copyFile(CHART_JS, files.chart)
  await fs.promises.writeFile(files.html, renderHtml(report))
  const svgs = []
  for (const [k, chart] of report.charts.entries()) {
    const file = path.join(dir, `${chart.file ?? `chart-${k + 1}`}.svg`)
    await fs.promises.writeFile(file, renderSvg(chart))
    svgs.push(file)
  }
  return [files.json, files.md, files.html, ...svgs]
}

function renderHtml (report) {
  const charts = report.charts.map(function withColours (chart) {
    return {
      ...chart,
      series: chart.series.map(function colour (s, k) { return { ...s, colour: seriesColour(s, k) } })
    }
  })
  // </script> inside JSON would end the script element early
  const data = JSON.stringify(charts).replace(/</g, '\\u003c')
  const canvases = charts.map(function canvas (chart, k) {
    const title = htmlText(chart.title)
    return `<figure><canvas id="chart-${k}" role="img" aria-label="${title}"></canvas><figcaption>${title}</figcaption></figure>`
  }).join('\n')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${htmlText(report.title)}</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; padding: 0 1rem; color: #111; }
  .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(30rem, 1fr)); gap: 1.5rem; }
  figure { margin: 0; } figcaption { text-align: center; font-weight: 600; }
  pre { background: #f4f4f4; padding: 1rem; overflow-x: auto; }
  code { font-size: 0.95em; }
</style>
</head>
<body>
<h1>${htmlText(report.title)}</h1>
<p>${htmlText(report.meta.started)}, Node ${htmlText(report.meta.node)}: <code>${htmlText(report.command)}</code></p>
<div class="charts">
${canvases}
</div>
<h2>Table</h2>
<pre>${report.markdown.split('\n').map(htmlText).join('\n')}</pre>
<script src="chart.umd.js"></script>
<script>
const charts = ${data}
charts.forEach(function draw (chart, k) {
  new Chart(document.getElementById('chart-' + k), {
    type: 'line',
    data: {
      datasets: chart.series.map(function dataset (s) {
        const dashed = { pointRadius: s.dashed ? 0 : 4, borderDash: s.dashed ? [6, 4] : [] }
        return { label: s.label, data: s.points, borderColor: s.colour, backgroundColor: s.colour, ...dashed, tension: 0 }
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

/** The colour of series `k` of a chart, the same in the HTML and the SVG. */
function seriesColour (series, k) {
  return series.dashed ? '#000000' : PALETTE[k % PALETTE.length]
}

/** Round tick steps: 1, 2 or 5 times a power of ten, about `count` of them from 0 to `max`. */
function linearTicks (max, count = 5) {
  const top = max > 0 ? max : 1
  const raw = top / count
  const power = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 5, 10].map(function times (m) { return m * power }).find(function enough (s) { return s >= raw })
  const ticks = []
  for (let t = 0; t < top + step / 2; t += step) ticks.push(Number(t.toPrecision(12)))
  if (ticks[ticks.length - 1] < top) ticks.push(Number((ticks[ticks.length - 1] + step).toPrecision(12)))
  return ticks
}

/** Powers of ten that cover [min, max]. */
function logTicks (min, max) {
  const ticks = []
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) ticks.push(10 ** e)
  return ticks
}

function tickText (value) {
  if (value === 0) return '0'
  const abs = Math.abs(value)
  if (abs >= 1000 || abs < 0.01) return value.toExponential(0).replace('e+', 'e')
  return String(Number(value.toPrecision(3)))
}

/**
 * One chart as a standalone SVG: axes with ticks (a logarithmic x when the spec says so),
 * a line and points per series, dashed reference lines, a legend. No script, no fonts to load.
 */
function renderSvg (chart, { width = 760, height = 440 } = {}) {
  const margin = { left: 72, right: 190, top: 44, bottom: 58 }
  const plotW = width - margin.left - margin.right
  const plotH = height - margin.top - margin.bottom
  const points = chart.series.flatMap(function all (s) {
    return s.points.filter(function drawable (p) { return Number.isFinite(p.x) && Number.isFinite(p.y) && (!chart.logX || p.x > 0) })
  })
  const xs = points.map(function x (p) { return p.x })
  const ys = points.map(function y (p) { return p.y })
  const named = chart.xTicks?.filter(function usable (t) { return Number.isFinite(t.x) && (!chart.logX || t.x > 0) }) ?? []
  const xTicks = named.length > 1
    ? named.map(function at (t) { return t.x }).sort(function ascending (a, b) { return a - b })
    : chart.logX ? logTicks(Math.min(...xs, 1), Math.max(...xs, 1)) : linearTicks(Math.max(...xs, 0))
  function xLabel (x) {
    return named.find(function same (t) { return t.x === x })?.label ?? tickText(x)
  }
  const yTicks = linearTicks(Math.max(...ys, 0))
  const [x0, x1] = [xTicks[0], xTicks[xTicks.length - 1]]
  const y1 = yTicks[yTicks.length - 1]
  function px (x) {
    const share = chart.logX ? (Math.log10(x) - Math.log10(x0)) / (Math.log10(x1) - Math.log10(x0) || 1) : (x - x0) / ((x1 - x0) || 1)
    return (margin.left + share * plotW).toFixed(1)
  }
  function py (y) { return (margin.top + plotH - (y / (y1 || 1)) * plotH).toFixed(1) }
  const out = []
  const font = 'font-family="system-ui, sans-serif" font-size="12"'
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${font}>`)
  out.push(`<title>${htmlText(chart.title)}</title>`)
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`)
  out.push(`<text x="${width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="600">${htmlText(chart.title)}</text>`)
  for (const t of yTicks) {
    out.push(`<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${py(t)}" y2="${py(t)}" stroke="#e4e4e4"/>`)
    out.push(`<text x="${margin.left - 8}" y="${py(t)}" text-anchor="end" dominant-baseline="middle">${tickText(t)}</text>`)
  }
  for (const t of xTicks) {
    out.push(`<line x1="${px(t)}" x2="${px(t)}" y1="${margin.top}" y2="${margin.top + plotH}" stroke="#e4e4e4"/>`)
    out.push(`<text x="${px(t)}" y="${margin.top + plotH + 18}" text-anchor="middle">${htmlText(xLabel(t))}</text>`)
  }
  out.push(`<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#888888"/>`)
  const xTitle = `${htmlText(chart.x)}${chart.logX ? ' (log scale)' : ''}`
  out.push(`<text x="${margin.left + plotW / 2}" y="${height - 14}" text-anchor="middle">${xTitle}</text>`)
  out.push(`<text transform="translate(18 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">${htmlText(chart.y)}</text>`)
  for (const [k, s] of chart.series.entries()) {
    const colour = seriesColour(s, k)
    const drawn = s.points.filter(function drawable (p) { return Number.isFinite(p.x) && Number.isFinite(p.y) && (!chart.logX || p.x > 0) })
    const dash = s.dashed ? ' stroke-dasharray="7 5"' : ''
    if (drawn.length > 1) {
      const line = drawn.map(function xy (p) { return `${px(p.x)},${py(p.y)}` }).join(' ')
      out.push(`<polyline points="${line}" fill="none" stroke="${colour}" stroke-width="2"${dash}/>`)
    }
    if (!s.dashed) {
      for (const p of drawn) {
        const title = htmlText(`${s.label}: ${xLabel(p.x)}, ${tickText(p.y)}`)
        out.push(`<circle cx="${px(p.x)}" cy="${py(p.y)}" r="3.5" fill="${colour}"><title>${title}</title></circle>`)
      }
    }
    const ly = margin.top + 10 + k * 20
    const lx = margin.left + plotW + 16
    out.push(`<line x1="${lx}" x2="${lx + 24}" y1="${ly}" y2="${ly}" stroke="${colour}" stroke-width="2"${dash}/>`)
    out.push(`<text x="${lx + 30}" y="${ly}" dominant-baseline="middle">${htmlText(s.label)}</text>`)
  }
  out.push('</svg>')
  return out.join('\n') + '\n'
}
