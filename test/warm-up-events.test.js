/**
 * An experiment's warm-up upload says so on the lab's bus (lib/util/lab-events.js WARM_UP_HEADER),
 * so that the dashboard neither draws nor counts it and a run's record leaves it out; any other
 * upload's events carry no such mark.
 */
import assert from 'node:assert/strict'
import { WARM_UP_HEADER } from '../lib/util/lab-events.js'
import { generatedGzip, labInTempDir, post } from './helpers.js'

describe('a warm-up upload on the lab\'s bus', function () {
  const lab = labInTempDir('warm-up-events')

  async function eventsOf (headers) {
    const seen = []
    const events = lab.app.locals.events
    function onRequest (event) { seen.push(event) }
    events.on('request', onRequest)
    try {
      const res = await post(`${lab.url}/good`, await generatedGzip({ size: 3 }), headers)
      assert.equal(res.status, 200)
    } finally {
      events.off('request', onRequest)
    }
    return seen.map(function phaseAndMark (e) { return [e.phase, e.warmUp ?? null] })
  }

  it('marks POST /good\'s start and end warmUp when the upload carries the header', async function () {
    assert.deepEqual(await eventsOf({ 'content-type': 'application/gzip', [WARM_UP_HEADER]: '1' }), [['start', true], ['end', true]])
  })

  it('leaves any other upload unmarked', async function () {
    assert.deepEqual(await eventsOf({ 'content-type': 'application/gzip' }), [['start', null], ['end', null]])
    assert.deepEqual(await eventsOf({ 'content-type': 'application/gzip', [WARM_UP_HEADER]: 'yes' }), [['start', null], ['end', null]])
  })
})
