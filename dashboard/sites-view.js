/** "Which code holds it": each route's top allocation sites as ranked bars (README.md). */
import { createRouteTracker, createSiteSummary, readWindow, routesInWindow, shareText, siteLine, siteShare, sitesHelp } from '/lib/runs/sites.js'
import { ROUTE_COLORS } from './charts.js'
import { make } from './dom.js'
import { formatMiB } from './format.js'

/** Bars drawn per route. */
const BARS = 8

/** The label of the lab's own column. */
const LAB = 'lab'

function routeHead (route, entry) {
  const known = Object.hasOwn(ROUTE_COLORS, route)
  const windows = entry === null ? 'no window of its own' : `${entry.windows} window${entry.windows === 1 ? '' : 's'}`
  const allocated = entry?.allocatedBytes === undefined ? '' : `allocated ${formatMiB(entry.allocatedBytes)} (sampled) · `
  const name = route === LAB ? 'the lab\'s own code' : `/${route}`
  return make('h3', {},
    make('span', { class: `swatch ${known ? `swatch-${route}` : 'swatch-other'}`, 'aria-hidden': 'true' }),
    ` ${name} `,
    make('span', { class: 'sites-grew' }, `${allocated}${windows}`))
}

function siteBar (site, route, entry, scale) {
  const bar = make('span', { class: 'site-bar', 'aria-hidden': 'true' }, make('span', { class: 'site-allocated' }), make('span', { class: 'site-held' }))
  // widths through the CSSOM: the exported page's policy allows no style attribute
  bar.children[0].style.width = `${Math.max(0.5, site.allocatedBytes / scale * 100)}%`
  bar.children[1].style.width = `${site.heldBytes === null ? 0 : site.heldBytes / scale * 100}%`
  const share = shareText(siteShare(site, entry))
  const figures = [
    site.kind,
    site.thread,
    `${formatMiB(site.allocatedBytes)} allocated`,
    site.heldBytes === null ? 'held not known' : `${formatMiB(site.heldBytes)} held`,
    ...(share === '' ? [] : [`${share} of ${route === LAB ? 'the lab\'s' : `/${route}'s`} allocation`])
  ]
  return make('li', { class: 'site', 'data-line': siteLine(site), 'data-kind': site.kind },
    bar,
    make('code', { class: 'site-line' }, siteLine(site)),
    make('span', { class: 'site-figures' }, figures.join(' · ')))
}

/**
 * Draw a summary into `box` (replacing what it held). `routes`: the columns' order (a run's routes first). Returns: what
 * is drawn (`sitesState`)
 */
export function renderSites (box, summary, { routes = [], live = false } = {}) {
  const title = make('h2', {}, 'Which code holds it')
  if (summary === undefined || summary === null) {
    box.replaceChildren(title, make('p', { class: 'help' }, 'This record has no allocation sites: the lab had not kept them yet, or sampling was off (--allocation-sampling).'))
    return { routes: [], lab: null, spanning: 0 }
  }
  const order = [...routes, ...summary.routes.map(function route (r) { return r.route })].filter(function first (r, k, all) { return all.indexOf(r) === k })
  const entries = order.map(function entryOf (route) { return { route, entry: summary.routes.find(function named (r) { return r.route === route }) ?? null } })
  const lab = (summary.lab?.sites.length ?? 0) > 0 ? { route: LAB, entry: { windows: null, ...summary.lab } } : null
  let scale = 1
  for (const { entry } of [...entries, ...(lab === null ? [] : [lab])]) for (const s of entry?.sites.slice(0, BARS) ?? []) scale = Math.max(scale, s.allocatedBytes, s.heldBytes ?? 0)
  function column ({ route, entry }) {
    const list = make('ol', { class: 'site-bars' }, ...(entry?.sites.slice(0, BARS) ?? []).map(function bar (s) { return siteBar(s, route, entry, scale) }))
    const head = route === LAB ? make('h3', {}, ` the lab's own code `, make('span', { class: 'sites-grew' }, `allocated ${formatMiB(entry.allocatedBytes)} (sampled) · in no route's lines`)) : routeHead(route, entry)
    return make('section', { class: route === LAB ? 'sites-route sites-lab' : 'sites-route', 'data-route': route }, head, list)
  }
  const notes = []
  if (summary.spanning > 0) notes.push(`${summary.spanning} window${summary.spanning === 1 ? '' : 's'} in which two routes had requests in flight ${summary.spanning === 1 ? 'is' : 'are'} in neither column.`)
  if (entries.length === 0) notes.push(live ? 'The sites come with each window while an experiment runs.' : 'No window of this run had a route of its own.')
  box.replaceChildren(
    title,
    make('p', { class: 'help' }, sitesHelp(summary.intervalBytes ?? null)),
    make('div', { class: 'sites-columns' }, ...entries.map(column), ...(lab === null ? [] : [column(lab)])),
    ...notes.map(function note (text) { return make('p', { class: 'help sites-note' }, text) }))
  return sitesState(entries, lab, summary.spanning)
}

/** What is drawn, for the debug view: each column's route, allocation and bars, the lab's apart. */
function sitesState (entries, lab, spanning) {
  function columnState ({ route, entry }) {
    return {
      route,
      allocated: entry?.allocatedBytes ?? null,
      windows: entry?.windows ?? 0,
      sites: (entry?.sites.slice(0, BARS) ?? []).map(function site (s) {
        return { line: siteLine(s), kind: s.kind, thread: s.thread, allocated: s.allocatedBytes, held: s.heldBytes, share: shareText(siteShare(s, entry)) }
      })
    }
  }
  return { routes: entries.map(columnState), lab: lab === null ? null : columnState(lab), spanning }
}

/** A record's sites into `box`. */
export function renderRecordSites (box, record) {
  return renderSites(box, record.timeline.sites, { routes: record.run.routes })
}

/**
 * The live view: fed every stream event (`onEvent`), it adds each sample's window to the run's summary and draws it; a
 * run's start begins a new one. The windows are the ones its record keeps: the samples carry the run's last ones after
 * it ends (lib/metrics/alloc-sites.js take).
 */
export function createLiveSites (box) {
  let tracker = createRouteTracker()
  let summary = createSiteSummary()
  let routes = []
  let drawn = null
  let windows = 0

  function draw () {
    drawn = renderSites(box, summary.toJSON(), { routes, live: true })
  }

  function onEvent (type, data) {
    if (data === null || typeof data !== 'object') return
    if (type === 'request') {
      tracker.onRequest(data)
      if (data.phase === 'start' && typeof data.route === 'string' && !routes.includes(data.route) && routes.length < 16) routes.push(data.route)
    } else if (type === 'sample') {
      const window = readWindow(data.allocationSites, data.time)
      if (window === null) return
      window.routes = routesInWindow(tracker, window)
      summary.add(window)
      windows++
      draw()
    } else if (type === 'experiment' && data.phase === 'start') {
      summary = createSiteSummary()
      tracker = createRouteTracker()
      routes = []
      windows = 0
      draw()
    }
  }

  draw()
  return {
    onEvent,
    state: function state () { return { ...drawn, windows } }
  }
}
