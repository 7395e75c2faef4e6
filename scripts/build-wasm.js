/**
 * Assembles the lab's WebAssembly sources (lib/json/*.wat) into the `.wasm` beside each, which
 * are committed: the lab runs without the assembler, and a spec (test/wasm-build.test.js) holds
 * each binary to its source. `npm run build:wasm` after editing a `.wat`; `--out DIR` writes
 * the binaries there instead (what the spec compares).
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { parseArgs } from 'node:util'
import { isMain, runScript } from './cli.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
/** Where the sources are. */
export const WASM_SOURCES = path.join(ROOT, 'lib', 'json')

/** The `.wat` files the lab builds. */
export function wasmSources () {
  return fs.readdirSync(WASM_SOURCES).filter(function isWat (name) { return name.endsWith('.wat') }).sort()
}

/**
 * Assemble one source (SIMD on) with wabt, the pinned devDependency.
 * @param {string} name a file of wasmSources()
 * @returns {Promise<Uint8Array>}
 */
export async function assemble (name) {
  // STREAMLAB_WABT: a wabt installed elsewhere, where node_modules cannot take it
  const wabt = await createRequire(path.join(ROOT, 'package.json'))(process.env.STREAMLAB_WABT ?? 'wabt')()
  const module = wabt.parseWat(name, fs.readFileSync(path.join(WASM_SOURCES, name), 'utf8'), { simd: true })
  try {
    module.validate()
    return module.toBinary({ log: false, canonicalize_lebs: true, relocatable: false, write_debug_names: false }).buffer
  } finally {
    module.destroy()
  }
}

const USAGE = `Usage: npm run build:wasm [-- --out DIR]

Assembles lib/json/*.wat (SIMD on) with wabt, the pinned devDependency, into the .wasm beside each.
  --out DIR   write the binaries into DIR instead (what test/wasm-build.test.js compares)
  -h, --help  this text`

function readOptions (argv) {
  const { values } = parseArgs({ args: argv, options: { out: { type: 'string' }, help: { type: 'boolean', short: 'h' } } })
  if (values.help) return null
  return { outDir: values.out === undefined ? WASM_SOURCES : path.resolve(values.out) }
}

async function build ({ outDir }) {
  for (const name of wasmSources()) {
    const bytes = await assemble(name)
    const target = path.join(outDir, name.replace(/\.wat$/, '.wasm'))
    fs.writeFileSync(target, bytes)
    console.log(`${path.relative(process.cwd(), target)}: ${bytes.length} bytes`)
  }
  return 0
}

if (isMain(import.meta.url)) await runScript('build:wasm', { usage: USAGE, readOptions, run: build })
