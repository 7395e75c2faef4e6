/**
 * The parse-cost projection (lib/json/parse-cost.js) must be an upper bound on
 * what JSON.parse really takes, for every shape of document: admission and
 * /good's record.too.dense refusal rely on it. Each shape is parsed in a
 * fresh process, so the figures are that parse's own.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { ParseCostMeter, projectParseCost } from '../../lib/json/parse-cost.js'

const run = promisify(execFile)
const PROBE = fileURLToPath(new URL('../fixtures/parse-cost-probe.js', import.meta.url))
const MiB = 1024 * 1024
/**
 * What RSS may take beyond the projection: the pages the young generation
 * and the allocator hold as the parse runs, which move with the runtime and
 * the collector's timing on a busy machine. 8 MiB of long strings is
 * projected at 18.1 MiB; its heap stays under that (16.2 MiB on Node 20,
 * 8.2 on Node 24), its RSS did not on Node 24: 18.8 MiB on a quiet machine,
 * 18.5 and 19.4 in two runs on Node 24 in portable mode beside two CPU hogs.
 * `node --expose-gc test/fixtures/parse-cost-probe.js "long strings" 8` prints them.
 */
const RSS_NOISE = 4 * MiB

const SHAPES = ['tiny objects', 'tiny arrays', 'small integers', 'doubles', 'empty objects', 'empty arrays', 'nested arrays',
  'short strings', 'long strings', 'non-ASCII strings', 'literals', 'one object, many keys', 'generated items']

describe('the parse-cost projection', function () {
  this.timeout(60_000)

  for (const shape of SHAPES) {
    it(`is at least the heap JSON.parse takes for 8 MiB of ${shape}, and the RSS within its noise`, async function () {
      const { stdout } = await run(process.execPath, ['--expose-gc', PROBE, shape, '8'], { maxBuffer: MiB })
      const figures = JSON.parse(stdout)
      assert.ok(figures.projected >= figures.heap,
        `${shape}: projected ${(figures.projected / MiB).toFixed(1)} MiB, JSON.parse took ${(figures.heap / MiB).toFixed(1)} MiB of heap`)
      assert.ok(figures.projected + RSS_NOISE >= figures.rss,
        `${shape}: projected ${(figures.projected / MiB).toFixed(1)} MiB, JSON.parse took ${(figures.rss / MiB).toFixed(1)} MiB of RSS`)
    })
  }

  it('gives the same figure whatever the chunking, strings and escapes split anywhere', function () {
    const text = Buffer.from('{"items":[{"a":"x\\\\\\"y,[{","b":[1,2,{}]},[[]],"caf\u00e9 数据"]}')
    const whole = projectParseCost(text)
    for (let cut = 1; cut < text.length; cut++) {
      const meter = new ParseCostMeter()
      meter.write(text.subarray(0, cut))
      meter.write(text.subarray(cut))
      assert.deepEqual(meter.result(), whole, `cut at ${cut}`)
    }
  })

  it('sizes the strings exactly when the caller knows the text length', function () {
    const text = Buffer.from('["数据数据"]')
    const bound = projectParseCost(text)
    const exact = projectParseCost(text, { chars: text.toString('utf8').length })
    assert.ok(exact.heap < bound.heap)
    assert.ok(exact.sourceString === 2 * 8, 'eight characters, two bytes each')
  })
})
