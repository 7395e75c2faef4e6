/**
 * "Which code holds it": each route's top allocation sites (docs/metrics.md, "Allocation sites")
 * as ranked bars, a column per route side by side (/bad beside /good). A bar is what its line
 * allocated over the run, the darker part the most it held at once; its text names the line
 * (`file:line function`), the kind, the thread, both figures, and the share of the route's growth
 * (peak above idle) that what it held makes. Live, from the stream's samples while an experiment
 * runs (`createLiveSites`); replayed, from a record's `timeline.sites` (`renderSites`, run-view.js).
 * Windows go to routes as a record's do (lib/runs/sites.js): a window two routes shared, to neither.
 *
 * A site's names come from the server or a record: text nodes (dom.js `make`), never markup.
 */
import { createRouteTracker, createSiteSummary, growthByRoute, readWindow, routesInWindow, siteLine } from '/lib/runs/sites.js'
import { ROUTE_COLORS } from './charts.js'
import { make } from './dom.js'
import { formatMiB } from './format.js'

/** Bars drawn per route. */
const BARS = 8

/** "53%", "<1%", ">100%" (a line that held more than the route grew: its heap was there at idle too); '' without a growth to share. */
function shareText (held, growth) {
  if (held === null || growth === undefined || !(growth.bytes > 0)) return ''
  const share = held / growth.bytes * 100
  if (share > 100) return '>100%'
  return share > 0 && share < 1 ? '<1%' : `${Math.round(share)}%`
}

function routeHead (route, entry, growth) {
  const known = Object.hasOwn(ROUTE_COLORS, route)
  const grew = growth === undefined
    ? 'growth not known yet'
    : `grew ${formatMiB(growth.bytes)} (${growth.from === 'results' ? 'peak above idle' : 'the most one request held'})`
  const windows = entry === null ? 'no window of its own' : `${entry.windows} window${entry.windows === 1 ? '' : 's'}`
  return make('h3', {},
    make('span', { class: `swatch ${known ? `swatch-${route}` : 'swatch-other'}`, 'aria-hidden': 'true' }),
    ` /${route} `,
    make('span', { class: 'sites-grew' }, `${grew} · ${windows}`))
}

function siteBar (site, route, growth, scale) {
  const bar = make('span', { class: 'site-bar', 'aria-hidden': 'true' }, make('span', { class: 'site-allocated' }), make('span', { class: 'site-held' }))
  // widths through the CSSOM: the exported page's policy allows no style attribute
  bar.children[0].style.width = `${Math.max(0.5, site.allocatedBytes / scale * 100)}%`
  bar.children[1].style.width = `${site.heldBytes === null ? 0 : site.heldBytes / scale * 100}%`
  const share = shareText(site.heldBytes, growth)
  const figures = [
    site.kind,
    site.thread,
    `${formatMiB(site.allocatedBytes)} allocated`,
    site.heldBytes === null ? 'held not known' : `${formatMiB(site.heldBytes)} held`,
    ...(share === '' ? [] : [`${share} of /${route}'s growth`])
  ]
  return make('li', { class: 'site', 'data-line': siteLine(site), 'data-kind': site.kind },
    bar,
    make('code', { class: 'site-line' }, siteLine(site)),
    make('span', { class: 'site-figures' }, figures.join(' · ')))
}

/**
 * Draw a summary into `box` (replacing what it held).
 * @param {HTMLElement} box
 * @param {{ routes: Array<{ route: string, windows: number, sites: object[] }>, spanning: number, idle: number }|undefined} summary
 * @param {Map<string, { bytes: number, from: string }>} growth by route (sites.js growthByRoute)
 * @param {{ routes?: string[], live?: boolean }} [how] `routes`: the columns' order (a run's routes first)
 * @returns {object} what is drawn (`sitesState`)
 */
export function renderSites (box, summary, growth, { routes = [], live = false } = {}) {
  const title = make('h2', {}, 'Which code holds it')
  if (summary === undefined || summary === null) {
    box.replaceChildren(title, make('p', { class: 'help' }, 'This record has no allocation sites: the lab had not kept them yet, or sampling was off (--allocation-sampling).'))
    return { routes: [], spanning: 0 }
  }
  const order = [...routes, ...summary.routes.map(function route (r) { return r.route })].filter(function first (r, k, all) { return all.indexOf(r) === k })
  const entries = order.map(function entryOf (route) { return { route, entry: summary.routes.find(function named (r) { return r.route === route }) ?? null } })
  let scale = 1
  for (const { entry } of entries) for (const s of entry?.sites.slice(0, BARS) ?? []) scale = Math.max(scale, s.allocatedBytes, s.heldBytes ?? 0)
  const columns = entries.map(function column ({ route, entry }) {
    const list = make('ol', { class: 'site-bars' }, ...(entry?.sites.slice(0, BARS) ?? []).map(function bar (s) { return siteBar(s, route, growth.get(route), scale) }))
    return make('section', { class: 'sites-route', 'data-route': route }, routeHead(route, entry, growth.get(route)), list)
  })
  const notes = []
  if (summary.spanning > 0) notes.push(`${summary.spanning} window${summary.spanning === 1 ? '' : 's'} in which two routes had requests in flight ${summary.spanning === 1 ? 'is' : 'are'} in neither column.`)
  if (entries.length === 0) notes.push(live ? 'The sites come every 2 s while an experiment runs.' : 'No window of this run had a route of its own.')
  box.replaceChildren(
    title,
    make('p', { class: 'help' }, 'Each route\'s lines that allocated the most, sampled about every 512 KiB: the bar is what the line allocated over the run, ' +
      'the darker part the most it held at once; the share is what it held of the route\'s growth.'),
    make('div', { class: 'sites-columns' }, ...columns),
    ...notes.map(function note (text) { return make('p', { class: 'help sites-note' }, text) }))
  return sitesState(entries, growth, summary.spanning)
}

/** What is drawn, for the debug view: each column's route, growth and bars. */
function sitesState (entries, growth, spanning) {
  return {
    routes: entries.map(function route ({ route, entry }) {
      return {
        route,
        growth: growth.get(route)?.bytes ?? null,
        windows: entry?.windows ?? 0,
        sites: (entry?.sites.slice(0, BARS) ?? []).map(function site (s) {
          return { line: siteLine(s), kind: s.kind, thread: s.thread, allocated: s.allocatedBytes, held: s.heldBytes, share: shareText(s.heldBytes, growth.get(route)) }
        })
      }
    }),
    spanning
  }
}

/**
 * A record's sites into `box`.
 * @param {HTMLElement} box
 * @param {object} record a checked record
 */
export function renderRecordSites (box, record) {
  return renderSites(box, record.timeline.sites, growthByRoute(record), { routes: record.run.routes })
}

/**
 * The live view: fed every stream event (`onEvent`), it adds each sample's window to the run's
 * summary and draws it; a run's start begins a new one, its result gives the growth of a route whose requests did not.
 * @param {HTMLElement} box
 * @returns {{ onEvent: (type: string, data: unknown) => void, state: () => object }}
 */
export function createLiveSites (box) {
  let tracker = createRouteTracker()
  let summary = createSiteSummary()
  let growth = new Map()
  let routes = []
  let drawn = null
  let windows = 0

  function draw () {
    drawn = renderSites(box, summary.toJSON(), growth, { routes, live: true })
  }

  function onEvent (type, data) {
    if (data === null || typeof data !== 'object') return
    if (type === 'request') {
      tracker.onRequest(data)
      if (data.phase === 'start' && typeof data.route === 'string' && !routes.includes(data.route) && routes.length < 16) routes.push(data.route)
      // a route's growth is its largest request's peak (sites.js growthByRoute)
      if (data.phase === 'end' && Number.isFinite(data.heldPeak) && data.heldPeak > 0 && (growth.get(data.route)?.from !== 'requests' || data.heldPeak > growth.get(data.route).bytes)) {
        growth.set(data.route, { bytes: data.heldPeak, from: 'requests' })
      }
    } else if (type === 'sample') {
      const window = readWindow(data.allocationSites, data.time)
      if (window === null) return
      window.routes = routesInWindow(tracker, window)
      summary.add(window)
      windows++
      draw()
    } else if (type === 'experiment') {
      if (data.phase === 'start') {
        summary = createSiteSummary()
        tracker = createRouteTracker()
        growth = new Map()
        routes = []
        windows = 0
        draw()
      } else if (data.phase === 'result' && data.result !== null && typeof data.result === 'object') {
        let grown = new Map()
        try {
          grown = growthByRoute({ results: data.result })
        } catch {
          // a result the contract's readers cannot read leaves the requests' peaks as the growth
        }
        // the result's peak above idle only where no request said what it held
        for (const [route, grew] of grown) if (!growth.has(route)) growth.set(route, grew)
        if (windows > 0) draw()
      }
    }
  }

  draw()
  return {
    onEvent,
    state: function state () { return { ...drawn, windows } }
  }
}
