/**
 * The committed WebAssembly binaries are their sources: each `.wat` in lib/json, assembled again
 * with the pinned wabt into a fresh folder, gives the `.wasm` beside it byte for byte.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { WASM_SOURCES, wasmSources } from '../scripts/build-wasm.js'

describe('the committed WebAssembly binaries', function () {
  let out

  before(function () {
    out = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-wasm-'))
  })

  after(function () {
    fs.rmSync(out, { recursive: true, force: true })
  })

  it('has a source for the record cutter and the UTF-8 decoder', function () {
    assert.deepEqual(wasmSources(), ['cutter.wat', 'utf8.wat'])
  })

  it('are what `npm run build:wasm` makes of their sources', function () {
    this.timeout(60000)
    execFileSync(process.execPath, ['scripts/build-wasm.js', '--out', out], { cwd: path.join(WASM_SOURCES, '..', '..'), stdio: 'pipe' })
    for (const name of wasmSources()) {
      const binary = name.replace(/\.wat$/, '.wasm')
      const built = fs.readFileSync(path.join(out, binary))
      const committed = fs.readFileSync(path.join(WASM_SOURCES, binary))
      assert.ok(built.equals(committed), `lib/json/${binary} is not lib/json/${name} assembled: run npm run build:wasm`)
    }
  })
})
