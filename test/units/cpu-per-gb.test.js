/**
 * CPU seconds per GB and a route's CPU share (lib/measure/cpu.js): computed from what was
 * measured, nothing else. That two runs of one route agree on it within 10 % is a bench's
 * finding (docs/ingest.md), not a timed spec's.
 */
import assert from 'node:assert/strict'
import { cpuPerGB, cpuShare, processCpuSeconds, spread, USER_HZ } from '../../lib/measure/cpu.js'
import { stagesCpuPerGB, STAGES } from '../../lib/measure/bound.js'

/** A /proc/<pid>/stat line: utime and stime are its 14th and 15th fields. */
function statLine (command, utime, stime) {
  const after = ['S', '1', '1', '1', '0', '-1', '4194560', '100', '0', '0', '0', String(utime), String(stime), '0', '0']
  return `4242 (${command}) ${after.join(' ')} 20 0 11 0 99\n`
}

describe('CPU per GB (lib/measure/cpu.js)', function () {
  describe('processCpuSeconds', function () {
    it('adds user and system ticks of /proc/<pid>/stat, at USER_HZ ticks a second', function () {
      function read (file) {
        assert.equal(file, '/proc/4242/stat')
        return statLine('node', 250, 50)
      }
      assert.equal(processCpuSeconds(4242, read), 300 / USER_HZ)
    })

    it('reads past a command that holds spaces and parentheses', function () {
      function read () { return statLine('node (a) b) c', 7, 3) }
      assert.equal(processCpuSeconds(4242, read), 10 / USER_HZ)
    })

    it('is null where there is no /proc, or the process is gone', function () {
      function missing () { throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' }) }
      assert.equal(processCpuSeconds(4242, missing), null)
      assert.equal(processCpuSeconds(4242, function garbled () { return '4242 (node) S' }), null)
    })

    it('is null in portable mode, as every reading of /proc is', function () {
      const saved = process.env.STREAMLAB_PORTABLE
      process.env.STREAMLAB_PORTABLE = '1'
      try {
        assert.equal(processCpuSeconds(process.pid), null)
      } finally {
        if (saved === undefined) delete process.env.STREAMLAB_PORTABLE
        else process.env.STREAMLAB_PORTABLE = saved
      }
    })

    it('reads this process, whose CPU only grows', function () {
      const before = processCpuSeconds(process.pid)
      if (before === null) this.skip()
      let x = 0
      for (let i = 0; i < 3e7; i++) x += i
      assert.ok(x > 0)
      assert.ok(processCpuSeconds(process.pid) >= before)
    })
  })

  describe('cpuPerGB', function () {
    it('divides the CPU seconds by the GB (1e9 bytes) served', function () {
      assert.equal(cpuPerGB(1.5, 250e6), 6)
      assert.equal(cpuPerGB(0, 1e9), 0)
    })

    it('is null without a CPU figure or without bytes', function () {
      assert.equal(cpuPerGB(null, 1e9), null)
      assert.equal(cpuPerGB(1, 0), null)
      assert.equal(cpuPerGB(1, null), null)
      assert.equal(cpuPerGB(-1, 1e9), null)
      assert.equal(cpuPerGB(Infinity, 1e9), null)
    })
  })

  describe('cpuShare', function () {
    it('is the stages\' CPU per GB over the route\'s: 1 when the route spends what its stages do', function () {
      assert.equal(cpuShare(8, 8), 1)
      assert.equal(cpuShare(16, 8), 0.5)
      assert.equal(cpuShare(8.5, 7.225), 0.85)
    })

    it('is null when either figure is missing', function () {
      assert.equal(cpuShare(null, 8), null)
      assert.equal(cpuShare(8, null), null)
      assert.equal(cpuShare(0, 8), null)
    })
  })

  describe('stagesCpuPerGB (lib/measure/bound.js)', function () {
    it('sums the CPU per GB of every stage', function () {
      const cells = STAGES.map(function cell (stage, k) { return { stage, cpuSecondsPerGB: k + 1 } })
      assert.equal(stagesCpuPerGB(cells), 10)
    })

    it('is null when a stage has no CPU figure', function () {
      const cells = STAGES.slice(1).map(function cell (stage) { return { stage, cpuSecondsPerGB: 2 } })
      assert.equal(stagesCpuPerGB(cells), null)
      assert.equal(stagesCpuPerGB([...cells, { stage: STAGES[0], cpuSecondsPerGB: null }]), null)
    })
  })

  describe('spread', function () {
    it('is how far the largest figure is above the smallest, as a share of the smallest', function () {
      assert.equal(spread([10, 11, 10.5]), 0.1)
      assert.equal(spread([8, 8]), 0)
    })

    it('leaves out missing figures, and is null with fewer than two', function () {
      assert.equal(spread([8, null, 10]), 0.25)
      assert.equal(spread([8, null]), null)
      assert.equal(spread([]), null)
    })
  })
})
