/**
 * The result contract (lib/experiments/result-contract.js) kept by every
 * experiment in the registry, each run through POST /experiments with small
 * parameters (a load process each, and the embedded database for db-export),
 * as the dashboard, the bench reports, the demo and the screenshots read it.
 * A new experiment fails this spec until it names its quick parameters below.
 * validateResult itself is test/units/result-contract.test.js's.
 */
import assert from 'node:assert/strict'
import { EXPERIMENTS } from '../../experiments/index.js'
import { validateProgress, validateResult } from '../../lib/experiments/result-contract.js'
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
  'abort-upload': { route: 'both', uploads: 2, sweep: 'single', bytes: '100KB', abortAt: 50, waitSeconds: 0 },
  backpressure: { bytes: '2MB', delayMs: 1, seconds: 5 }
})

describe('the result contract (lib/experiments/result-contract.js)', function () {
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
