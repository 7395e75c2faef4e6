/**
 * The result contract (lib/experiments/result-contract.js): validateResult and
 * validateProgress name what a result or a progress report lacks. That the
 * result of every experiment in the registry keeps it is
 * test/slow/result-contract-runs.test.js's.
 */
import assert from 'node:assert/strict'
import { validateProgress, validateResult } from '../../lib/experiments/result-contract.js'

const CHART = Object.freeze({ title: 't', x: 'x', y: 'y', series: [{ label: 's', points: [{ x: 1, y: 2 }, { x: 2, y: null }] }] })

describe('the result contract (lib/experiments/result-contract.js)', function () {
  describe('validateResult', function () {
    it('finds nothing wrong with cells, tables, charts, published figures and verdicts of the right shape', function () {
      const result = {
        cells: [{ route: 'good', ms: 12, server: { peakAboveIdle: 1024 } }],
        tables: [{
          name: 'routes',
          caption: 'two routes',
          columns: [{ key: 'bad', label: 'POST /bad', route: 'bad' }, { key: 'good', label: 'POST /good' }],
          rows: [
            { field: 'ms', label: 'Time', unit: 'ms', values: { bad: 12.5, good: null } },
            { field: 'latency', label: 'avg / p99', unit: 'ms', values: { bad: [1, 2], good: [null, 3] } },
            { field: 'answer', label: 'Answer', unit: 'text', empty: 'none', values: { bad: '413 x' } },
            { field: 'sha', label: 'sha256', unit: 'text', more: true, values: { bad: 'ab12' } }
          ]
        }],
        charts: [CHART],
        published: [{ label: 'p', value: 1, unit: 's', source: 'docs/sources.md#ingest', measured: null }],
        verdicts: [{ verdict: 'clean', ok: true, text: 'fine' }],
        caption: 'a run',
        server: { peakRss: 1 }
      }
      assert.deepEqual(validateResult(result), [])
    })

    it('names each member that breaks it', function () {
      assert.deepEqual(validateResult(null), ['the result is not an object'])
      assert.deepEqual(validateResult({}), ['the result has neither cells nor tables: nothing to show'])
      const problems = validateResult({
        cells: [1],
        tables: [{ name: 'Bad Name', columns: [{ key: 'a', label: 'A' }], rows: [{ field: 'f', label: 'F', unit: 'parsecs', more: 1, values: { b: {} } }] }],
        charts: [{ title: 't', x: 'x', series: [] }],
        published: [{ label: 'p', value: '1', unit: 's', source: 'x', measured: 'n/a' }],
        verdicts: [{ verdict: 'v', text: 't' }]
      })
      for (const expected of [
        'cells[0] is not an object',
        'tables[0].name is not a kebab-case name',
        'tables[0].rows[0].unit "parsecs" is not one of text, count, ms, MiB, MB, MB/s',
        'tables[0].rows[0].more is not true',
        'tables[0].rows[0].values.b names no column',
        'tables[0].rows[0].values.b is not a number, a string, null or an array of numbers',
        'charts[0].y is not a string',
        'charts[0].series is not a non-empty array',
        'published[0].value is not a number',
        'published[0].measured is not a number or null',
        'verdicts[0].ok is not true, false or null'
      ]) assert.ok(problems.includes(expected), `${expected}\nin ${JSON.stringify(problems, null, 1)}`)
    })

    it('checks a chart\'s points and a progress report', function () {
      assert.deepEqual(validateResult({ cells: [{}], charts: [CHART] }), [])
      assert.deepEqual(validateResult({ cells: [{}], charts: [{ ...CHART, series: [{ label: 's', points: [{ x: '1', y: 2 }] }] }] }), ['charts[0].series[0].points[0] is not { x: number, y: number|null }'])
      assert.deepEqual(validateProgress({ done: 1, total: 2, stage: 'load', route: 'good', cell: 'c' }), [])
      assert.deepEqual(validateProgress({ done: 3, total: 2 }), ['done/total 3/2 are not integers with 0 <= done <= total'])
      assert.deepEqual(validateProgress({ done: 0, total: 1, route: 4 }), ['route is not a string'])
    })
  })
})
