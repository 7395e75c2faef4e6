/** "Which code holds it": each route's top allocation sites as ranked bars (README.md). */
import { readWindow, siteLine } from '/lib/allocation/site.js'
import { createRouteTracker, createSiteSummary, routesInWindow, shareText, siteShare, sitesHelp } from '/lib/runs/sites.js'
import { ROUTE_COLORS } from './charts.js'
import { make } from './dom.js'
import { formatMiB } from './format.js'

const BARS = 8

const LAB = 'lab'

/** A column's head: the route in its colour (the lab's code in none), what it allocated and over how many windows. */
function routeHead (route, entry) {
  const known = Object.hasOwn(ROUTE_COLORS, route)
  const windows = route === LAB
    ? 'in no route\'s lines'
    : entry === null ? 'no window of its own' : `${entry.windows} window${entry.windows === 1 ? '' : 's'}`
  const allocated = entry?.allocatedBytes === undefined ? '' : `allocated ${formatMiB(entry.allocatedBytes)} (sampled) · `
  const swatch = make('span', { class: `swatch ${known ? `swatch-${route}` : 'swatch-other'}`, 'aria-hidden': 'true' })
  return make('h3', {}, ...(route === LAB ? [] : [swatch]), ` ${route === LAB ? 'the lab\'s own code' : `/${route}`} `,
    make('span', { class: 'sites-grew' }, `${allocated}${windows}`))
}

function siteBar (site, route, entry, scale) {
  const bar = make('span', { class: 'site-bar', 'aria-hidden': 'true' },
    make('span', { class: 'site-allocated' }), make('span', { class: 'site-held' }))
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

/** Draw a summary into `box`, columns in `routes` order first; returns what is drawn (`sitesState`). */
export function renderSites (box, summary, { routes = [], live = false } = {}) {
  const title = make('h2', {}, 'Which code holds it')
  if (summary === undefined || summary === null) {
    const why = 'This record has no allocation sites: the lab had not kept them yet, or sampling was off (--allocation-sampling).'
    box.replaceChildren(title, make('p', { class: 'help' }, why))
    return { routes: [], lab: null, spanning: 0 }
  }
  const byRoute = new Map(summary.routes.map(function pair (r) { return [r.route, r] }))
  const order = new Set([...routes, ...byRoute.keys()])
  const entries = [...order].map(function entryOf (route) { return { route, entry: byRoute.get(route) ?? null } })
  const lab = (summary.lab?.sites.length ?? 0) > 0 ? { route: LAB, entry: { windows: null, ...summary.lab } } : null
  const drawnSites = [...entries, ...(lab === null ? [] : [lab])].flatMap(function top ({ entry }) { return topSites(entry) })
  const scale = Math.max(1, ...drawnSites.map(function most (s) { return Math.max(s.allocatedBytes, s.heldBytes ?? 0) }))
  function column ({ route, entry }) {
    const list = make('ol', { class: 'site-bars' }, ...topSites(entry).map(function bar (s) { return siteBar(s, route, entry, scale) }))
    const attributes = { class: route === LAB ? 'sites-route sites-lab' : 'sites-route', 'data-route': route }
    return make('section', attributes, routeHead(route, entry), list)
  }
  const notes = []
  const { spanning } = summary
  if (spanning > 0) {
    const [windows, are] = spanning === 1 ? ['window', 'is'] : ['windows', 'are']
    notes.push(`${spanning} ${windows} in which two routes had requests in flight ${are} in neither column.`)
  }
  if (entries.length === 0) {
    notes.push(live ? 'The sites come with each window while an experiment runs.' : 'No window of this run had a route of its own.')
  }
  box.replaceChildren(
    title,
    make('p', { class: 'help' }, sitesHelp(summary.intervalBytes ?? null)),
    make('div', { class: 'sites-columns' }, ...entries.map(column), ...(lab === null ? [] : [column(lab)])),
    ...notes.map(function note (text) { return make('p', { class: 'help sites-note' }, text) }))
  return sitesState(entries, lab, summary.spanning)
}

function topSites (entry) { return entry?.sites.slice(0, BARS) ?? [] }

/** What is drawn, for the debug view: each column's route, allocation and bars, the lab's apart. */
function sitesState (entries, lab, spanning) {
  function columnState ({ route, entry }) {
    return {
      route,
      allocated: entry?.allocatedBytes ?? null,
      windows: entry?.windows ?? 0,
      sites: topSites(entry).map(function site (s) {
        const share = shareText(siteShare(s, entry))
        return { line: siteLine(s), kind: s.kind, thread: s.thread, allocated: s.allocatedBytes, held: s.heldBytes, share }
      })
    }
  }
  return { routes: entries.map(columnState), lab: lab === null ? null : columnState(lab), spanning }
}

export function renderRecordSites (box, record) {
  return renderSites(box, record.timeline.sites, { routes: record.run.routes })
}

/** The live view: each `sites` window joins the run's summary (the windows its record keeps, the last too); a run's start begins anew. */
export function createLiveSites (box) {
  let tracker = createRouteTracker()
  let summary = createSiteSummary()
  let routes = []
  let drawn = null
  let windows = 0

  function draw () { drawn = renderSites(box, summary.toJSON(), { routes, live: true }) }

  function onEvent (type, data) {
    if (data === null || typeof data !== 'object') return
    if (type === 'request') {
      tracker.onRequest(data)
      const fresh = typeof data.route === 'string' && !routes.includes(data.route)
      if (data.phase === 'start' && fresh && routes.length < 16) routes.push(data.route)
    } else if (type === 'sites') {
      const window = readWindow(data)
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
  return { onEvent, state: function state () { return { ...drawn, windows } } }
}
