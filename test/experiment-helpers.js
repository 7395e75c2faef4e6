/**
 * Helpers for the specs that run experiments through /experiments: JSON
 * calls, a run followed to its end (over HTTP or on the lab's bus), and
 * checks of what results carry.
 */

/** A JSON request and its JSON answer. */
export async function call (url, method = 'GET', body) {
  const init = { method }
  if (body !== undefined) {
    init.headers = { 'content-type': 'application/json' }
    init.body = JSON.stringify(body)
  }
  const res = await fetch(url, init).catch(function again (err) {
    // a GET on a kept-alive connection the server closed as it was sent (a lab in this process,
    // its loop held by /bad's parse, times the idle socket out late): idempotent, so asked again
    if (method === 'GET' && err?.cause?.code === 'ECONNRESET') return fetch(url, init)
    throw err
  })
  return { status: res.status, headers: res.headers, body: await res.json() }
}

/**
 * Start an experiment and wait for its run to end.
 * @returns {Promise<object>} the run as GET /experiments/:id answers it at the end
 */
export async function runExperiment (url, name, params) {
  const started = await call(`${url}/experiments`, 'POST', { name, params })
  if (started.status !== 202) throw new Error(`POST /experiments answered ${started.status}: ${JSON.stringify(started.body)}`)
  for (;;) {
    await new Promise(function wait (resolve) { setTimeout(resolve, 100) })
    const { body } = await call(`${url}/experiments/${started.body.id}`)
    if (body.status !== 'running') return body
  }
}

/** Collect a run's bus events until one satisfies `until`. */
export function watchRun (events, until) {
  const seen = []
  let stop
  const ended = new Promise(function waitForEvent (resolve) {
    function onExperiment (event) {
      seen.push(event)
      if (until(event)) {
        events.off('experiment', onExperiment)
        resolve(seen)
      }
    }
    events.on('experiment', onExperiment)
    stop = function stopWatching () { events.off('experiment', onExperiment) }
  })
  return { seen, ended, stop }
}

/** Whether a run's bus event is its last: a result, an error or a cancellation. */
export function isEnd (event) {
  return event.phase === 'result' || event.phase === 'error' || event.phase === 'cancelled'
}

/** Check a ChartSpec array (lib/experiments/result-contract.js) as lib/measure/report.js and the dashboard draw them. */
export function assertCharts (assert, charts) {
  assert.ok(Array.isArray(charts) && charts.length > 0, 'charts')
  for (const chart of charts) {
    assert.equal(typeof chart.title, 'string')
    assert.equal(typeof chart.x, 'string')
    assert.equal(typeof chart.y, 'string')
    assert.ok(Array.isArray(chart.series) && chart.series.length > 0, `${chart.title} has series`)
    for (const s of chart.series) {
      assert.equal(typeof s.label, 'string')
      for (const p of s.points) {
        assert.equal(typeof p.x, 'number')
        assert.ok(p.y === null || typeof p.y === 'number')
      }
    }
  }
}

/** Check the published figures: { label, value, unit, source, measured }. */
export function assertPublished (assert, published) {
  assert.ok(Array.isArray(published) && published.length > 0, 'published')
  for (const p of published) {
    assert.equal(typeof p.label, 'string')
    assert.equal(typeof p.value, 'number')
    assert.equal(typeof p.unit, 'string')
    assert.match(p.source, /docs\/sources\.md#[a-z-]+/)
    assert.ok(p.measured === null || typeof p.measured === 'number')
  }
}
