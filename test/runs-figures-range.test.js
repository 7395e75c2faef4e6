/**
 * A run record's figures in their physical range (lib/runs/check.js, which the CLI, GET /runs and
 * the dashboard read records by): a forged record with negative bytes, a negative count or a
 * figure that is no finite number is refused with the field named, where before it was drawn as
 * "-4768371.6 MiB allocated" and "1235072 % of /good's growth". The record specs: test/runs*.test.js.
 */
import assert from 'node:assert/strict'
import { readRunRecord } from '../lib/runs/format.js'
import { checkRecordText } from '../lib/runs/check.js'
import { makeBusyRecord, makeSitesRecord } from './runs-helpers.js'

/** The record's text with `forge` applied to a copy. */
function forged (record, forge) {
  const copy = structuredClone(record)
  forge(copy)
  return JSON.stringify(copy)
}

function refusal (text) {
  try {
    readRunRecord(text, 'forged.json')
    return null
  } catch (err) {
    return { status: err.status, message: err.message }
  }
}

describe('a run record\'s figures in their range (lib/runs/check.js)', function () {
  const { record: sites } = makeSitesRecord({ id: 'range-sites' })
  const { record: busy } = makeBusyRecord({ id: 'range-busy' })

  it('reads the lab\'s own records', function () {
    assert.equal(checkRecordText(JSON.stringify(sites)).problem, null)
    assert.equal(checkRecordText(JSON.stringify(busy)).problem, null)
  })

  it('refuses a site with negative bytes allocated, naming the field', function () {
    const text = forged(sites, function negative (r) { r.timeline.sites.routes[0].sites[0].allocatedBytes = -5e12 })
    assert.deepEqual(refusal(text), {
      status: 422,
      message: 'forged.json is not a run record this lab reads: ' +
        'timeline.sites.routes[0].sites[0].allocatedBytes is -5000000000000: a size or count is not negative'
    })
  })

  it('refuses negative held bytes in a site window, a sample\'s RSS, a span\'s peak, a stage, a collection', function () {
    const cases = [
      ['timeline.siteWindows[0].sites[0].heldBytes', function held (r) { r.timeline.siteWindows[0].sites[0].heldBytes = -1 }, sites],
      ['timeline.samples[0].rss', function rss (r) { r.timeline.samples[0].rss = -1 }, busy],
      ['timeline.spans[0].heldPeak', function peak (r) { r.timeline.spans[0].heldPeak = -1 }, busy],
      ['timeline.spans[0].held.read', function stage (r) { r.timeline.spans[0].held.read = -1 }, busy],
      ['where.memoryBytes', function memory (r) { r.where.memoryBytes = -1 }, busy]
    ]
    for (const [field, forge, record] of cases) {
      const problem = checkRecordText(forged(record, forge)).problem
      assert.deepEqual(problem, { field, problem: 'is -1: a size or count is not negative' }, field)
    }
  })

  it('refuses a figure that is no finite number: JSON has none, and a huge exponent reads as Infinity', function () {
    const one = forged(sites, function one (r) { r.timeline.sites.routes[0].sites[0].heldBytes = 1 })
    const text = one.replace('"heldBytes":1,', '"heldBytes":1e999,')
    const field = 'timeline.sites.routes[0].sites[0].heldBytes'
    assert.deepEqual(checkRecordText(text).problem, { field, problem: 'is not a number or null' })
  })
})
