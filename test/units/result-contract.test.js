/**
 * The result contract (lib/experiments/result-contract.js): validateResult names what a
 * result lacks, and the result of every experiment in the registry keeps it,
 * run here through POST /experiments with small parameters, as the dashboard,
 * the bench reports, the demo and the screenshots read it. A new experiment
 * fails this spec until it names its quick parameters below.
 */
import assert from 'node:assert/strict'
import { EXPERIMENTS } from '../../experiments/index.js'
import { UNITS, validateChart, validateProgress, validateResult } from '../../lib/experiments/result-contract.js'
import { runExperiment } from '../experiment-helpers.js'
import { labInTempDir } from '../helpers.js'

/** Each registered experiment's parameters for a run of a few seconds. */
const QUICK = Object.freeze({
  ingest: { route: 'both', bytes: '200KB', concurrency: 2, requests: 2 },
  upload: { route: 'both', concurrency: 2, sweep: 'single', bytes: '200KB' },
  'chunk-size': { concurrency: 4, requests: 8 },
  'tiny-writes': { mode: 'all', bytes: 20_000, sweep: 'single' },
  'db-export': { mode: 'both', rows: 300, batchSizes: '300,100', highWaterMarks: '50' },
  'zip-bomb': { variant: 'ratio', route: 'both', bytes: '20MB' },
  'abort-upload': { route: 'both', uploads: 2, sweep: 'single', bytes: '100KB', abortAt: 50, waitSeconds: 0 }
})

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
            { field: 'answer', label: 'Answer', unit: 'text', empty: 'none', values: { bad: '413 x' } }
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
        tables: [{ name: 'Bad Name', columns: [{ key: 'a', label: 'A' }], rows: [{ field: 'f', label: 'F', unit: 'parsecs', values: { b: {} } }] }],
        charts: [{ title: 't', x: 'x', series: [] }],
        published: [{ label: 'p', value: '1', unit: 's', source: 'x', measured: 'n/a' }],
        verdicts: [{ verdict: 'v', text: 't' }]
      })
      for (const expected of [
        'cells[0] is not an object',
        'tables[0].name is not a kebab-case name',
        `tables[0].rows[0].unit "parsecs" is not one of ${UNITS.join(', ')}`,
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
      assert.deepEqual(validateChart(CHART), [])
      assert.deepEqual(validateChart({ ...CHART, series: [{ label: 's', points: [{ x: '1', y: 2 }] }] }), ['chart.series[0].points[0] is not { x: number, y: number|null }'])
      assert.deepEqual(validateProgress({ done: 1, total: 2, stage: 'load', route: 'good', cell: 'c' }), [])
      assert.deepEqual(validateProgress({ done: 3, total: 2 }), ['done/total 3/2 are not integers with 0 <= done <= total'])
      assert.deepEqual(validateProgress({ done: 0, total: 1, route: 4 }), ['route is not a string'])
    })
  })

  describe('every registered experiment', function () {
    // the embedded database, seeded small on its first use by the db-export run
    const lab = labInTempDir('result-contract', { database: { pgliteDir: 'memory://', seed: { desks: 20, items: 1000 } } })

    it('names its quick parameters here', function () {
      assert.deepEqual(Object.keys(QUICK).sort(), Object.keys(EXPERIMENTS).sort())
    })

    for (const name of Object.keys(EXPERIMENTS)) {
      it(`${name}: its result and last progress keep the contract`, async function () {
        this.timeout(180_000)
        const run = await runExperiment(lab.url, name, QUICK[name] ?? {})
        assert.equal(run.status, 'done', JSON.stringify(run.error))
        assert.deepEqual(validateResult(run.result), [], `${name}'s result: ${JSON.stringify(run.result).slice(0, 2000)}`)
        assert.deepEqual(validateProgress(run.progress), [], `${name}'s progress: ${JSON.stringify(run.progress)}`)
      })
    }
  })
})
