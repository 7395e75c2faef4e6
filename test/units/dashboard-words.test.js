/**
 * Words and labels the dashboard draws, one module at a time without a browser: the clock axis's
 * ticks (dashboard/format.js clockTicks) and a run's steps (dashboard/run-steps.js). The page in
 * Chromium: test/slow/dashboard-lessons.test.js.
 */
import assert from 'node:assert/strict'
import { clockTicks, formatClock } from '../../dashboard/format.js'
import { describeStep } from '../../dashboard/run-steps.js'

const LABEL_PX = 120

describe('clockTicks', function () {
  it('never gives two ticks the same label, however short the span', function () {
    const start = Date.UTC(2026, 0, 1, 0, 17, 25, 100)
    for (const spanMs of [200, 900, 1_500, 4_000, 61_000, 9 * 60_000]) {
      const labels = clockTicks(start, start + spanMs, 600, LABEL_PX).map(formatClock)
      assert.equal(new Set(labels).size, labels.length, `${spanMs} ms: ${labels.join(', ')}`)
    }
  })

  it('gives no more ticks than labels fit side by side, at whole steps', function () {
    const start = Date.UTC(2026, 0, 1, 0, 20, 58, 400)
    for (const width of [250, 600, 1200]) {
      const ticks = clockTicks(start, start + 3 * 60_000, width, LABEL_PX)
      assert.ok(ticks.length >= 1 && ticks.length <= Math.floor(width / LABEL_PX), `${width} px: ${ticks.length} ticks`)
      const steps = new Set(ticks.slice(1).map(function gap (t, i) { return t - ticks[i] }))
      assert.ok(steps.size <= 1, [...steps].join(', '))
      for (const t of ticks) assert.equal(t % 1000, 0)
    }
  })

  it('gives nothing for an axis without a span or a width', function () {
    assert.deepEqual(clockTicks(NaN, 10, 600, LABEL_PX), [])
    assert.deepEqual(clockTicks(10, 5, 600, LABEL_PX), [])
    assert.deepEqual(clockTicks(0, 10_000, 0, LABEL_PX), [])
  })
})

describe('describeStep', function () {
  it('names the bound step, counts its passes and says what it is for', function () {
    const step = describeStep({ stage: 'bound', done: 8, total: 8 })
    assert.equal(step.line, 'Measuring this machine\'s bound · 8 of 8 passes')
    assert.match(step.why, /ceiling each route is compared with/)
  })

  it('names the warm-up as not drawn and not counted, on its route, with no count', function () {
    const step = describeStep({ stage: 'warm-up', done: 0, total: 2, route: 'good' })
    assert.equal(step.line, 'Warm-up · /good')
    assert.match(step.why, /not drawn and not counted/)
  })

  it('counts the uploads on their route and cell', function () {
    assert.equal(describeStep({ stage: 'load', done: 3, total: 4, route: 'bad' }).line, 'Uploads · 3 of 4 uploads · /bad')
  })

  it('shows a step it does not know by its own name, with the count', function () {
    assert.deepEqual(describeStep({ stage: 'making the br bomb', done: 0, total: 2 }), { line: 'making the br bomb · 0 of 2', why: '' })
  })
})
