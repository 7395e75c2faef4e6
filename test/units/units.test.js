/**
 * lib/util/units.js: byte sizes as people type them, rounding, and the one set of formatters the server,
 * the command-line tools, the grader and the page print bytes and durations with.
 */
import assert from 'node:assert/strict'
import {
  formatBytes, formatDecimalBytes, formatDuration, formatMB, formatMemory, formatMiB, formatMs, formatStopwatch, parseByteSize, round
} from '../../lib/util/units.js'

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB

describe('lib/util/units.js', function () {
  describe('parseByteSize', function () {
    it('reads decimal and binary units, any case, decimals with a unit', function () {
      assert.equal(parseByteSize('1048576'), 1048576)
      assert.equal(parseByteSize('500MB'), 500e6)
      assert.equal(parseByteSize('1.5GiB'), 1.5 * GiB)
      assert.equal(parseByteSize(' 64 kib '), 64 * KiB)
      assert.equal(parseByteSize('2gb'), 2e9)
    })

    it('throws a TypeError for anything else', function () {
      for (const text of ['', 'MB', '-1', '1.5', '1.5B', '1e6', '1 TB', '0x10', 'ten', '99999999999GB']) {
        assert.throws(function parse () { parseByteSize(text) }, TypeError, text)
      }
      assert.throws(function parse () { parseByteSize(1024) }, /must be a string/)
    })
  })

  describe('round', function () {
    it('rounds to 1/scale, to a whole number unless told', function () {
      assert.deepEqual([round(2.5), round(1.2345, 100), round(0.00049, 1000), round(-1.25, 10)], [3, 1.23, 0, -1.2])
    })

    it('keeps a missing figure missing: null for null, NaN, Infinity or a string', function () {
      assert.deepEqual([round(null, 10), round(NaN), round(Infinity, 10), round('1.5', 10)], [null, null, null, null])
    })
  })

  describe('formatBytes', function () {
    it('picks a binary unit, one decimal above bytes', function () {
      assert.equal(formatBytes(0), '0 B')
      assert.equal(formatBytes(1023), '1023 B')
      assert.equal(formatBytes(KiB), '1.0 KiB')
      assert.equal(formatBytes(64 * KiB), '64.0 KiB')
      assert.equal(formatBytes(1.5 * MiB), '1.5 MiB')
      assert.equal(formatBytes(3 * GiB), '3.0 GiB')
      assert.equal(formatBytes(-2 * MiB), '-2.0 MiB')
    })
  })

  describe('formatMiB', function () {
    it('writes MiB whatever the size, one decimal unless told', function () {
      assert.equal(formatMiB(MiB / 2), '0.5 MiB')
      assert.equal(formatMiB(3 * GiB), '3072.0 MiB')
      assert.equal(formatMiB(118.4 * MiB, { digits: 0 }), '118 MiB')
      assert.equal(formatMiB(12.34 * MiB, { unit: false }), '12.3')
    })
  })

  describe('formatMemory', function () {
    it('keeps a round budget round and gives any other figure its decimals', function () {
      assert.equal(formatMemory(512 * MiB), '512 MiB')
      assert.equal(formatMemory(GiB), '1 GiB')
      assert.equal(formatMemory(270.4 * MiB), '270.4 MiB')
      assert.equal(formatMemory(1.02 * GiB), '1.02 GiB')
    })
  })

  describe('formatDecimalBytes', function () {
    it('writes decimal units as body sizes are given', function () {
      assert.equal(formatDecimalBytes(26.2e6), '26.2 MB')
      assert.equal(formatDecimalBytes(10e9), '10.0 GB')
      assert.equal(formatDecimalBytes(1e6), '1.0 MB')
      assert.equal(formatDecimalBytes(512e3), '512.0 KB')
    })
  })

  describe('formatMB', function () {
    it('keeps a small body in MB with three decimals, one from 0.1 MB, GB from 1e9', function () {
      assert.deepEqual([formatMB(42_000), formatMB(26.2e6), formatMB(10e9)], ['0.042 MB', '26.2 MB', '10.0 GB'])
    })
  })

  describe('formatDuration', function () {
    it('writes whole ms under a second and seconds with a decimal from there', function () {
      assert.equal(formatDuration(0), '0 ms')
      assert.equal(formatDuration(188.4), '188 ms')
      assert.equal(formatDuration(999.4), '999 ms')
      assert.equal(formatDuration(1000), '1.0 s')
      assert.equal(formatDuration(3820), '3.8 s')
      assert.equal(formatDuration(125_300), '125.3 s')
    })
  })

  describe('formatMs', function () {
    it('writes a latency in ms, a decimal under 100 ms and separators from there', function () {
      assert.equal(formatMs(12.46), '12.5 ms')
      assert.equal(formatMs(99.94), '99.9 ms')
      assert.equal(formatMs(100), '100 ms')
      assert.equal(formatMs(1234.5), '1,235 ms')
    })
  })

  describe('formatStopwatch', function () {
    it('writes m:ss, and h:mm:ss from an hour', function () {
      assert.equal(formatStopwatch(5000), '0:05')
      assert.equal(formatStopwatch(754_000), '12:34')
      assert.equal(formatStopwatch(3_723_000), '1:02:03')
    })
  })

  it('writes n/a for a figure that is missing, in every formatter', function () {
    for (const format of [formatBytes, formatMiB, formatMemory, formatDecimalBytes, formatMB, formatDuration, formatMs, formatStopwatch]) {
      for (const missing of [null, undefined, NaN, Infinity]) assert.equal(format(missing), 'n/a', `${format.name}(${missing})`)
    }
  })
})
