/**
 * npm run peaks (scripts/peak-sources.js): the sampled peak of a portable lab
 * beside the kernel's, over the same request, as docs/metrics.md quotes it.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { procAvailable } from '../../lib/util/platform.js'

const SCRIPT = fileURLToPath(new URL('../../scripts/peak-sources.js', import.meta.url))
const run = promisify(execFile)

describe('npm run peaks', function () {
  this.timeout(120_000)

  it('prints the kernel peak and the sampled peak of one upload side by side, the sampled one close to the kernel\'s', async function () {
    if (!procAvailable()) this.skip() // it compares with the kernel: Linux only, outside portable mode (the next spec)
    const { stdout } = await run(process.execPath, [SCRIPT, '--sizes', '20MB', '--routes', 'bad', '--repeat', '1'])
    const row = stdout.split('\n').find(function bad (line) { return line.startsWith('| /bad') })
    assert.ok(row, stdout)
    const [kernel, sampled] = [...row.matchAll(/([\d.]+) MiB/g)].slice(1, 3).map(function mib (m) { return Number(m[1]) })
    // /bad holds a 20 MB body several times over: a peak far above idle, which a sampler every 5 ms cannot miss
    assert.ok(kernel > 40, `kernel peak ${kernel} MiB`)
    assert.ok(Math.abs(sampled - kernel) / kernel < 0.1, `sampled ${sampled} MiB against kernel ${kernel} MiB`)
  })

  it('refuses to run where it cannot read the kernel\'s peak (portable mode), with exit 2', async function () {
    const failed = await run(process.execPath, [SCRIPT, '--repeat', '1'], { env: { ...process.env, STREAMLAB_PORTABLE: '1' } })
      .then(function ran () { return null }, function threw (err) { return err })
    assert.ok(failed, 'it ran')
    assert.equal(failed.code, 2)
    assert.match(failed.stderr, /needs Linux's \/proc/)
  })
})
