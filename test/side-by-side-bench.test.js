/**
 * npm run bench -- side-by-side (experiments/side-by-side/bench.js): its flags and its report, from
 * figures made up. The bench itself starts servers and sends whole documents: it is run by hand.
 */
import assert from 'node:assert/strict'
import { parseArgs } from 'node:util'
import { normalize, options, sideBySideReport } from '../experiments/side-by-side/bench.js'

function flags (...args) {
  return normalize(parseArgs({ args, options }).values)
}

/** A summarised cell as the bench makes it, with figures made up. */
function cell (target, file, mbPerSecond, extra = {}) {
  return {
    target, file, mbPerSecond, cpuPerGB: 8, cpuSpread: 0.05, peakAboveIdle: 4 * 1048576, bytes: 500e6, items: 10,
    runs: [{ mbPerSecond }], ...extra
  }
}

describe('npm run bench -- side-by-side', function () {
  it('takes one or more documents, another server\'s script and the rounds, three unless told', function () {
    const file = 'package.json'
    assert.deepEqual(flags('--file', file), { files: [file], seed: null, variants: [], repeat: 3 })
    assert.deepEqual(flags('--file', file, '--file', file, '--seed', file, '--repeat', '1'), { files: [file, file], seed: file, variants: [], repeat: 1 })
  })

  it('takes lab variants as server flags, each a fresh lab of its own, and refuses a variant that names no flag', function () {
    const file = 'package.json'
    assert.deepEqual(flags('--file', file, '--variant=--parse-threads=1', '--variant=--no-simd --parse-threads=1').variants,
      [['--parse-threads=1'], ['--no-simd', '--parse-threads=1']])
    assert.deepEqual(flags('--file', file, '--variant=--parse-threads 1').variants, [['--parse-threads', '1']])
    assert.throws(function notAFlag () { flags('--file', file, '--variant', 'fast') }, { name: 'TypeError', message: /--variant takes server flags/ })
  })

  it('refuses no document, a file that is not there, and rounds that are no positive integer, naming the flag', function () {
    assert.throws(function noFile () { flags() }, { name: 'TypeError', message: /--file names at least one/ })
    const refused = { name: 'TypeError' }
    assert.throws(function missing () { flags('--file', 'test-data/none.json.gz') }, { ...refused, message: /--file .*: no such file/ })
    assert.throws(function noSeed () { flags('--file', 'package.json', '--seed', 'none.js') }, { ...refused, message: /--seed none\.js/ })
    assert.throws(function badRepeat () { flags('--file', 'package.json', '--repeat', '0') }, { name: 'TypeError', message: /--repeat/ })
  })

  it('reports each server on each document, and the lab\'s MB/s over the seed\'s and over the first document\'s', function () {
    const cells = [cell('lab', 'lines.gz', 150), cell('seed', 'lines.gz', 100, { peakAboveIdle: null }), cell('lab', 'min.gz', 135)]
    const { markdown, data } = sideBySideReport(cells, 3)
    assert.match(markdown, /^\| server +\| document +\| MB inflated +\| MB\/s +\| CPU s\/GB +\| CPU apart +\| peak above idle MiB +\|/m)
    assert.match(markdown, /^\| lab +\| lines\.gz +\| 500\.0 +\| 150\.0 +\| 8\.00 +\| 5% +\| 4\.0 +\| 150\.0 +\|$/m)
    assert.match(markdown, /^\| seed +\| lines\.gz +\| 500\.0 +\| 100\.0 +\| 8\.00 +\| 5% +\| n\/a +\|/m)
    assert.match(markdown, /- lab on lines\.gz: 1\.50x the seed's MB\/s$/m)
    assert.match(markdown, /- lab on min\.gz: 0\.90x the lab's MB\/s on lines\.gz$/m)
    assert.equal(data.cells, cells)
  })

  it('reports a lab variant\'s MB/s and CPU s/GB over the lab\'s own on the same document', function () {
    const cells = [cell('lab', 'lines.gz', 150), cell('lab --parse-threads 1', 'lines.gz', 120, { cpuPerGB: 10 })]
    const { markdown } = sideBySideReport(cells, 3)
    assert.match(markdown, /^\| lab --parse-threads 1 +\| lines\.gz +\| 500\.0 +\| 120\.0 +\| 10\.00 +\|/m)
    assert.match(markdown, /- lab --parse-threads 1 on lines\.gz: 0\.80x the lab's MB\/s, 1\.25x its CPU s\/GB$/m)
  })
})
