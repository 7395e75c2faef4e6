/** Garbage collections on the memory chart, where each happened, in a bounded log (README.md). */
import { clipToArea } from './dom.js'
import { formatMiB } from './format.js'
import { MINOR_KINDS } from '../lib/metrics/gc-kinds.js'

const OLD_CAP = 2000
const YOUNG_CAP = 20_000
const KIND_MAX = 40
const NEAR_PX = 6 // how near the point under the mouse a collection is named in the tooltip, px
const NAMED = 4 // collections the tooltip names one by one; the rest are counted

/** What each collection's name means, one line each: the tooltip and the key say it. */
export const GC_TERMS = Object.freeze({
  scavenge: 'the young generation collected: its few survivors copied out, the rest dropped at once',
  'minor-mark-sweep': 'the young generation collected by marking its survivors instead of copying them',
  'mark-compact': 'a full collection: the whole heap marked, the dead freed, the live moved together',
  'incremental-marking': 'a step of marking the old generation, done between the program\'s work before a mark-compact',
  'weak-callbacks': 'callbacks for objects only weakly held (FinalizationRegistry, WeakRef), run after a collection'
})
/** What a collection marked as the lab's means. */
export const LAB_CAUSE = 'forced by the lab reading the heap profile for allocation sites, not by the run'

/** The key's GC items, each term with its line as a tooltip (`title`): made with `make` (dom.js). */
export function gcKeyItems (make) {
  return [
    make('span', { 'aria-hidden': 'true' }, '▲'), ' ', make('abbr', { title: GC_TERMS['mark-compact'] }, 'mark-compact'), ', ',
    make('span', { 'aria-hidden': 'true' }, '△'), ' ', make('abbr', { title: LAB_CAUSE }, 'one the lab forced'),
    ' (pale ticks: ', make('abbr', { title: GC_TERMS.scavenge }, 'scavenges'), ')'
  ]
}

/** The page's static key: each `[data-gc-term]` gets its term's line as its tooltip. */
export function explainGcTerms (root) {
  for (const element of root.querySelectorAll('[data-gc-term]')) {
    const term = element.getAttribute('data-gc-term')
    element.title = term === 'lab' ? LAB_CAUSE : GC_TERMS[term] ?? ''
  }
}

const MARK_COMPACT = '#000000'
const LAB_MARK = '#8a8a8a'
const OLD_TICK = 'rgba(80, 80, 80, 0.7)'
const YOUNG_TICK = 'rgba(0, 114, 178, 0.35)'
const TRIANGLE_PX = 7

/** Collections by time: the old generation's whole, the young one's when and how long. */
export class GcLog {
  constructor (settings = {}) {
    this.cap = settings.cap ?? OLD_CAP
    this.youngCap = settings.youngCap ?? YOUNG_CAP
    this.old = [] // `{ at, kind, ms, heapBefore, heapAfter, lab }` each
    this.young = [] // `{ at, kind, ms }` each
    this.omitted = 0 // collections the server left out of full samples (lib/metrics/gc-events.js)
  }

  /** Collections from a sample or a record, in time order. `omitted`: how many the server left out. */
  add (events, omitted = 0) {
    if (Number.isSafeInteger(omitted) && omitted > 0) this.omitted += omitted
    if (!Array.isArray(events)) return
    for (const e of events) {
      if (e === null || typeof e !== 'object' || !Number.isFinite(e.at) || typeof e.kind !== 'string') continue
      const kind = e.kind.slice(0, KIND_MAX)
      const ms = Number.isFinite(e.ms) ? e.ms : null
      if (MINOR_KINDS.includes(kind)) {
        this.young.push({ at: e.at, kind, ms })
      } else {
        this.old.push({ at: e.at, kind, ms, heapBefore: figure(e.heapBefore), heapAfter: figure(e.heapAfter), lab: e.cause === 'lab' })
      }
    }
    if (this.old.length > this.cap) this.old.splice(0, this.old.length - this.cap)
    if (this.young.length > this.youngCap) this.young.splice(0, this.young.length - this.youngCap)
  }

  trim (from) {
    for (const list of [this.old, this.young]) {
      let drop = 0
      while (drop < list.length && list[drop].at < from) drop++
      if (drop > 0) list.splice(0, drop)
    }
  }

  counts () {
    return {
      markCompacts: this.old.filter(isMarkCompact).length,
      labMarkCompacts: this.old.filter(function labs (e) { return isMarkCompact(e) && e.lab }).length,
      otherOld: this.old.filter(function notMarkCompact (e) { return !isMarkCompact(e) }).length,
      young: this.young.length,
      omitted: this.omitted
    }
  }
}

function figure (n) { return Number.isFinite(n) ? n : null }

function isMarkCompact (e) { return e.kind === 'mark-compact' }

/** Draws the log given as the chart's `plugins.streamlabGc.log` over the lines, and counts what it drew in `chart.$streamlabGc`. */
export const gcPlugin = {
  id: 'streamlabGc',
  afterDatasetsDraw (chart, args, options) {
    const log = options.log
    if (!log) return
    const { ctx, chartArea: area } = chart
    const x = chart.scales.x
    const drawn = { markCompacts: 0, labMarkCompacts: 0, otherOld: 0, youngColumns: 0, young: 0 }
    clipToArea(ctx, area)
    // the young ones by pixel column: a tick each, taller with the count
    const columns = new Map()
    for (const e of log.young) {
      if (e.at < x.min || e.at > x.max) continue
      const px = Math.round(x.getPixelForValue(e.at))
      columns.set(px, (columns.get(px) ?? 0) + 1)
      drawn.young++
    }
    ctx.fillStyle = YOUNG_TICK
    for (const [px, count] of columns) {
      const height = 4 + Math.min(8, 2 * Math.log2(count))
      ctx.fillRect(px, area.bottom - height, 1, height)
    }
    drawn.youngColumns = columns.size
    for (const e of log.old) {
      if (e.at < x.min || e.at > x.max) continue
      const px = Math.round(x.getPixelForValue(e.at)) + 0.5
      if (isMarkCompact(e) && e.lab) {
        // the lab's: a hollow grey triangle, no line up the chart
        ctx.strokeStyle = LAB_MARK
        ctx.lineWidth = 1
        ctx.beginPath()
        ctx.moveTo(px, area.bottom - TRIANGLE_PX)
        ctx.lineTo(px - TRIANGLE_PX / 2, area.bottom - 0.5)
        ctx.lineTo(px + TRIANGLE_PX / 2, area.bottom - 0.5)
        ctx.closePath()
        ctx.stroke()
        drawn.labMarkCompacts++
      } else if (isMarkCompact(e)) {
        ctx.strokeStyle = MARK_COMPACT
        ctx.globalAlpha = 0.45
        ctx.lineWidth = 1
        ctx.setLineDash([2, 3])
        ctx.beginPath()
        ctx.moveTo(px, area.top)
        ctx.lineTo(px, area.bottom - TRIANGLE_PX)
        ctx.stroke()
        ctx.setLineDash([])
        ctx.globalAlpha = 1
        ctx.fillStyle = MARK_COMPACT
        ctx.beginPath()
        ctx.moveTo(px, area.bottom - TRIANGLE_PX)
        ctx.lineTo(px - TRIANGLE_PX / 2 - 1, area.bottom)
        ctx.lineTo(px + TRIANGLE_PX / 2 + 1, area.bottom)
        ctx.closePath()
        ctx.fill()
        drawn.markCompacts++
      } else {
        ctx.fillStyle = OLD_TICK
        ctx.fillRect(px - 0.5, area.bottom - 12, 1, 12)
        drawn.otherOld++
      }
    }
    ctx.restore()
    chart.$streamlabGc = drawn
  }
}

/** Tooltip lines for the collections near the point: old-generation ones with time and heap before → after, young counted. */
export function gcTooltipLines (items) {
  const item = items[0]
  const chart = item?.chart
  const log = chart?.options?.plugins?.streamlabGc?.log
  if (!log || !Number.isFinite(item.element?.x)) return []
  const x = chart.scales.x
  function near (e) { return Math.abs(x.getPixelForValue(e.at) - item.element.x) <= NEAR_PX }
  const old = log.old.filter(near)
  const young = log.young.filter(near)
  const lines = old.slice(0, NAMED).map(function describe (e) {
    const read = e.heapBefore !== null && e.heapAfter !== null
    const heap = read ? `heap ${formatMiB(e.heapBefore)} → ${formatMiB(e.heapAfter)}` : 'heap not read'
    return `${e.kind}${e.lab ? ' (the lab\'s)' : ''} ${formatDuration(e.ms)}: ${heap}`
  })
  if (old.length > NAMED) lines.push(`and ${old.length - NAMED} more`)
  if (young.length > 0) {
    const ms = young.reduce(function sum (total, e) { return total + (e.ms ?? 0) }, 0)
    const kinds = [...new Set(young.map(function kind (e) { return e.kind }))].join(', ')
    lines.push(`${young.length} × ${kinds}, ${formatDuration(ms)} in all`)
  }
  const named = [...new Set([...old.slice(0, NAMED), ...young].map(function kind (e) { return e.kind }))]
  for (const kind of named) lines.push(`${kind}: ${GC_TERMS[kind] ?? 'a collection V8 names so'}`)
  if (old.slice(0, NAMED).some(function labs (e) { return e.lab })) lines.push(`(the lab's): ${LAB_CAUSE}`)
  return lines
}

function formatDuration (ms) { return Number.isFinite(ms) ? `${ms.toFixed(1)} ms` : '– ms' }
