/**
 * A run record in the page (docs/runs.md, "Replay, overlay, export"): the rules the page reads a
 * record by are the lab's own, in the same words (lib/runs/check.js); the lab serves the page the
 * few lib/ modules its imports reach and nothing else of lib/; the page's modules bundle into
 * one script (lib/runs/page-modules.js); and a run's offline page (lib/runs/run-page.js,
 * `npm run runs -- export`) inlines everything behind a policy that names its scripts by hash,
 * with the record as data no string of which can become markup. The page in Chromium:
 * test/slow/runs-replay.test.js (the dashboard) and test/slow/runs-export.test.js (the file).
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import vm from 'node:vm'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { checkRecordText, problemMessage } from '../lib/runs/check.js'
import { readRunRecord } from '../lib/runs/format.js'
import { bundleModules, moduleGraph, sharedModules } from '../lib/runs/page-modules.js'
import { runPage, runPageTemplate } from '../lib/runs/run-page.js'
import { embedRecord, emptyRecordElement } from '../lib/runs/run-page-data.js'
import { startLab } from './helpers.js'
import { MARKUP, makeBusyRecord, makeMarkupRecord, makeTestRecord } from './runs-helpers.js'

const CLI = fileURLToPath(new URL('../scripts/runs.js', import.meta.url))

/** The texts of a page's inline elements of one tag, and the attributes of their opening tags. */
function inlineElements (html, tag) {
  return [...html.matchAll(new RegExp(`<${tag}([^>]*)>([\\s\\S]*?)</${tag}>`, 'g'))].map(function element (m) { return { attributes: m[1], text: m[2] } })
}

/** The record a page holds, read back from its data element as the page reads it. */
function recordIn (html) {
  const data = inlineElements(html, 'script').find(function isData (e) { return /type="application\/json"/.test(e.attributes) })
  return JSON.parse(data.text)
}

function sha256 (text) {
  return `'sha256-${crypto.createHash('sha256').update(text).digest('base64')}'`
}

/** A folder of page modules for a spec: `files` by name. */
function pageFolder (files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-page-modules-'))
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text)
  return dir
}

describe('a run record in the page', function () {
  describe('the rules the page reads a record by (lib/runs/check.js)', function () {
    const cases = {
      'a JSON file of another kind': JSON.stringify({ format: 1, items: [] }),
      'a file that is not JSON': '{"kind": "streamlab.run", ',
      'a later format': JSON.stringify({ ...makeTestRecord().record, format: 2 }),
      'a sample out of order': (function outOfOrder () {
        const { record } = makeBusyRecord()
        record.timeline.samples[3].time = record.timeline.samples[2].time - 1
        return JSON.stringify(record)
      })(),
      'a route that is no string': (function badRoute () {
        const { record } = makeTestRecord()
        record.run.routes = [42]
        return JSON.stringify(record)
      })()
    }

    for (const [what, text] of Object.entries(cases)) {
      it(`refuses ${what} in the words of the lab's run.invalid`, function () {
        let thrown
        try {
          readRunRecord(text, 'dropped.json')
        } catch (err) {
          thrown = err
        }
        assert.equal(thrown?.type, 'run.invalid')
        const { record, problem } = checkRecordText(text)
        assert.equal(record, null)
        assert.equal(problemMessage('dropped.json', problem), thrown.message)
      })
    }

    it('refuses a file past the bound by its size, without reading it', function () {
      const { problem } = checkRecordText('not read', 5 * 1024 * 1024)
      assert.deepEqual(problem, { field: '(file)', problem: `is ${5 * 1024 * 1024} bytes, over the ${4 * 1024 * 1024} a record may be` })
    })

    it('reads a record the lab wrote as the lab reads it, markup and all', function () {
      const { record, text } = makeMarkupRecord()
      assert.deepEqual(checkRecordText(text), { record, problem: null })
      assert.deepEqual(readRunRecord(text), record)
    })
  })

  describe('the page\'s modules (lib/runs/page-modules.js)', function () {
    it('shares with the page only the lib/ modules its imports reach, none of them of Node', function () {
      const shared = sharedModules(['/main.js', '/run-page.js'])
      assert.deepEqual([...shared.keys()].sort(), [
        '/lib/allocation/site.js',
        '/lib/experiments/pipeline-sample.js',
        '/lib/experiments/result-contract.js',
        '/lib/ingest/stage-names.js',
        '/lib/metrics/gc-kinds.js',
        '/lib/runs/check.js',
        '/lib/runs/compare.js',
        '/lib/runs/figure-text.js',
        '/lib/runs/figures.js',
        '/lib/runs/run-page-data.js',
        '/lib/runs/site-compare.js',
        '/lib/runs/sites.js',
        '/lib/util/escape.js',
        '/lib/util/units.js',
        '/lib/util/wrap.js'
      ])
      for (const file of shared.values()) assert.doesNotMatch(fs.readFileSync(file, 'utf8'), /from 'node:|\bBuffer\b|\bprocess\./, file)
    })

    it('bundles a page into one script that runs each module once, after the modules it imports', function () {
      const graph = moduleGraph(['/run-page.js'])
      const order = [...graph.keys()]
      for (const [url, module] of graph) {
        for (const dependency of module.imports) assert.ok(order.indexOf(dependency.url) < order.indexOf(url), `${dependency.url} before ${url}`)
      }
      const bundle = bundleModules('/run-page.js')
      // it parses, as a classic script
      assert.ok(new vm.Script(bundle))
      assert.doesNotMatch(bundle, /^\s*(import|export)\b/m)
      assert.doesNotMatch(bundle, /<\/script/i)
      for (const url of order) assert.equal(bundle.split(`modules.set(${JSON.stringify(url)},`).length, 2, url)
    })

    it('runs a bundle as the modules would run: imports renamed, exports read once', function () {
      const dir = pageFolder({
        'a.js': "export const A = 2\nexport function twice (n) { return n * A }\n",
        'b.js': "import { twice as double, A } from './a.js'\nexport const B = double(A) + 1\n",
        'entry.js': "import {\n  B\n} from './b.js'\nglobalThis.seen = B\n"
      })
      try {
        const context = vm.createContext({})
        vm.runInContext(bundleModules('/entry.js', { dashboardDir: dir }), context)
        assert.equal(context.seen, 5)
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })

    it('refuses, naming the module, what the bundle cannot take: Node\'s modules, other syntax, cycles, other folders', function () {
      const refusals = {
        "import fs from 'node:fs'\n": /module syntax the page's bundle does not take/,
        "import { readFileSync } from 'node:fs'\n": /imports "node:fs": a page module imports page modules only/,
        'export default 1\n': /"export default 1" is module syntax/,
        "import { x } from './self.js'\nexport const x = 1\n": /imports itself/,
        "import { y } from '../elsewhere/y.js'\n": /not a page module/
      }
      for (const [text, refused] of Object.entries(refusals)) {
        const dir = pageFolder({ 'self.js': text })
        try {
          assert.throws(function bundle () { bundleModules('/self.js', { dashboardDir: dir }) }, refused, text)
        } finally {
          fs.rmSync(dir, { recursive: true, force: true })
        }
      }
    })
  })

  describe('the page of one run (lib/runs/run-page.js)', function () {
    const template = runPageTemplate()

    it('inlines Chart.js, the page\'s modules and its stylesheet, and loads nothing from anywhere', function () {
      const scripts = inlineElements(template, 'script').filter(function runs (e) { return !/type=/.test(e.attributes) })
      assert.equal(scripts.length, 2)
      assert.match(scripts[0].text, /Chart\.js v4\./)
      assert.match(scripts[1].text, /modules\.set\("\/run-page\.js"/)
      assert.equal(inlineElements(template, 'style').length, 1)
      assert.doesNotMatch(template, /\s(src|href)=/, 'no file, image or stylesheet is linked')
      assert.ok(template.includes(emptyRecordElement()))
    })

    it('has a policy that fetches nothing and runs only its two scripts, by their hashes', function () {
      const policy = template.match(/<meta http-equiv="Content-Security-Policy" content="([^"]+)">/)[1]
      const scripts = inlineElements(template, 'script').filter(function runs (e) { return !/type=/.test(e.attributes) })
      const style = inlineElements(template, 'style')[0].text
      assert.deepEqual(policy.split('; '), [
        "default-src 'none'",
        `script-src ${scripts.map(function hash (s) { return sha256(s.text) }).join(' ')}`,
        `style-src ${sha256(style)}`,
        "base-uri 'none'",
        "form-action 'none'"
      ])
      assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|https?:|\*/)
      // the policy comes before anything it governs
      assert.ok(template.indexOf('Content-Security-Policy') < template.indexOf('<style>'))
    })

    it('holds the record as data that no string of it can end: every < escaped, the record read back whole', function () {
      const { record } = makeMarkupRecord()
      const html = runPage(record)
      assert.deepEqual(recordIn(html), record)
      assert.ok(!html.includes(MARKUP), 'the markup is not in the page as markup')
      assert.ok(!html.includes('</script><script>window.__xss'), 'the title cannot close the data element')
      // the two scripts, the data element: nothing more
      assert.equal(html.match(/<script\b/g).length, 3)
      assert.equal(html.match(/<\/script>/g).length, 3)
      // the template is the same page with the record put in
      assert.equal(html.replace(/<script type="application\/json" id="run-record">[^<]*<\/script>/, emptyRecordElement()), template)
    })

    it('puts a record only into a page that has the empty data element', function () {
      assert.throws(function noSlot () { embedRecord('<!doctype html><p>no slot', makeTestRecord().record) }, /no empty record element/)
    })
  })

  describe('GET /run-page.html and GET /lib/… (routes/dashboard.js)', function () {
    let lab

    before(async function () {
      lab = await startLab()
    })

    after(async function () {
      await lab.close()
    })

    it('serves the lib/ modules the page imports, with the page\'s headers, and nothing else of lib/', async function () {
      const shared = await fetch(`${lab.url}/lib/runs/check.js`)
      assert.equal(shared.status, 200)
      assert.match(shared.headers.get('content-type'), /^text\/javascript/)
      assert.match(shared.headers.get('content-security-policy'), /default-src 'none'/)
      assert.equal(await shared.text(), fs.readFileSync(new URL('../lib/runs/check.js', import.meta.url), 'utf8'))
      for (const url of ['/lib/runs/store.js', '/lib/config/options.js', '/lib/runs/../../package.json', '/lib/README.md']) {
        const res = await fetch(`${lab.url}${url}`)
        assert.equal(res.status, 404, url)
      }
    })

    it('serves the page a run is exported into, with no run in it', async function () {
      const res = await fetch(`${lab.url}/run-page.html`)
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type'), /^text\/html/)
      const html = await res.text()
      assert.equal(html, runPageTemplate())
    })
  })

  describe('npm run runs -- export', function () {
    let dir

    before(function () {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-runs-export-'))
      fs.writeFileSync(path.join(dir, 'busy-run.json'), makeBusyRecord().text)
      fs.writeFileSync(path.join(dir, 'foreign.json'), JSON.stringify({ format: 1, items: [] }))
    })

    after(function () {
      fs.rmSync(dir, { recursive: true, force: true })
    })

    it('writes one page with the run in it, by id from the runs folder or from a file', async function () {
      const out = path.join(dir, 'run.html')
      const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'export', 'busy', '--dir', dir, '--out', out])
      assert.match(stdout, /^Wrote .*run\.html \([\d.]+ KiB\): run busy-run, ingest, as one page that opens from disk/)
      assert.deepEqual(recordIn(fs.readFileSync(out, 'utf8')), makeBusyRecord().record)
    })

    it('refuses a file that is no record with the lab\'s words, and exit code 2', async function () {
      const failed = await promisify(execFile)(process.execPath, [CLI, 'export', path.join(dir, 'foreign.json'), '--out', path.join(dir, 'x.html')]).catch(function refused (err) { return err })
      assert.equal(failed.code, 2)
      assert.match(failed.stderr, /foreign\.json is not a run record this lab reads: kind is not "streamlab\.run"/)
      assert.ok(!fs.existsSync(path.join(dir, 'x.html')))
    })
  })
})
