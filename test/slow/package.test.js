/**
 * The package (package.json "bin" and "files", bin/streamlab.js): `npm pack`
 * into a temporary folder, the tarball installed in an empty project there from
 * npm's cache (--prefer-offline: CI ran `npm ci` first), and `npx streamlab grade
 * --url … --start … --junit j.xml` run from that project against a Node service
 * and a Python one (test/fixtures/services/ingest_service.py, the standard
 * library alone; skipped, saying so, where python3 is missing). The JUnit file
 * is read back with a strict reader (test/xml.js) and, where python3 is, with
 * Python's xml.etree: one testcase per check of the card, a failure with its
 * message for each check that failed. What the lab writes goes to test-data/
 * in the project, never into node_modules. With --classroom, GitHub Classroom's
 * points, read from the GITHUB_OUTPUT file as its reporter reads them
 * (test/classroom-reporter.js). On the Node that runs the specs:
 * CI runs them on Node 20 and on Node 24 (.ci/run).
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { elementsNamed, readXml } from '../xml.js'
import { installTarball, openTempDir, packLab, runLine, userEnv } from '../package-helpers.js'
import { classroomTotals, parseRunnerResults, readStepOutputs } from '../classroom-reporter.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** The points GitHub Classroom's reporter totals from a GITHUB_OUTPUT file --classroom wrote, and the results. */
function classroomPoints (file) {
  const decoded = parseRunnerResults('grade', { GRADE_RESULTS: readStepOutputs(fs.readFileSync(file, 'utf8')).result })
  return { ...classroomTotals(decoded), results: decoded[0].results }
}
const PYTHON = spawnSync('python3', ['--version'], { stdio: 'ignore' }).status === 0 ? 'python3' : null
const DEV_DEPENDENCIES = Object.keys(JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).devDependencies)

/** Python's own XML parser on a file: the tags of the root, its suites and their cases, as one line each. */
function pythonReads (file) {
  const script = [
    'import sys, xml.etree.ElementTree as ET',
    'root = ET.parse(sys.argv[1]).getroot()',
    'print(root.tag, root.get("tests"), root.get("failures"))',
    'for s in root.iter("testsuite"): print("suite", s.get("name"), len(s.findall("testcase")), len(s.findall("testcase/failure")))'
  ].join('\n')
  const run = spawnSync(PYTHON, ['-c', script, file], { encoding: 'utf8' })
  assert.equal(run.status, 0, run.stderr)
  return run.stdout.trim().split('\n')
}

/** The JUnit file held to the card: a testcase per check, in its area's suite; a failure, with its message, for each that failed. */
function assertJunitMatchesCard (xml, card) {
  const root = readXml(xml)
  assert.equal(root.name, 'testsuites')
  const cases = elementsNamed(root, 'testcase')
  assert.deepEqual(cases.map(function named (c) { return `${c.attributes.classname}: ${c.attributes.name}` }),
    card.checks.map(function named (c) { return `streamlab.${c.area}: ${c.name}` }))
  card.checks.forEach(function sameVerdict (check, k) {
    const failures = elementsNamed(cases[k], 'failure')
    if (check.pass) return assert.equal(failures.length, 0, check.name)
    assert.equal(failures.length, 1, check.name)
    assert.equal(failures[0].attributes.message, `${check.figure} [limit: ${check.limit}]`)
    assert.ok(failures[0].text.includes(`hint: ${check.hint}`), check.name)
  })
  assert.equal(root.attributes.tests, String(card.checks.length))
  assert.equal(root.attributes.failures, String(card.checks.filter(function failed (c) { return !c.pass }).length))
}

describe('the package: npm pack, installed in an empty folder, npx streamlab', function () {
  this.timeout(180_000)
  let dir
  let project
  let packed

  before(async function packAndInstall () {
    dir = openTempDir('streamlab-package-')
    packed = await packLab(dir)
    project = path.join(dir, 'project')
    fs.mkdirSync(project, { mode: 0o755 })
    await installTarball(project, packed.tarball)
  })

  after(function removeAll () {
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  it('ships what running needs, and none of the specs, docs, reports or dev dependencies', function () {
    for (const file of ['bin/streamlab.js', 'server.js', 'worker.js', 'app.js', 'lib/config/options.js', 'routes/ingest.js', 'dashboard/index.html',
      'lib/generate/bombs.js', 'grader/student/student-child.js', 'exercises/01-stream/starter.js', 'experiments/index.js', 'scripts/grade.js', 'scripts/demo/lab.js', 'README.md']) {
      assert.ok(packed.files.includes(file), file)
    }
    // of docs/, the lessons' runs alone: every lab lists them (lib/runs/lessons.js)
    const unwanted = packed.files.filter(function notShipped (f) { return (/^(test|docs|examples|reports|test-data|\.ci)\//.test(f) && !/^docs\/figures\/[a-z0-9-]+\.run\.json$/.test(f)) || /\.(png|heapsnapshot|tgz)$/.test(f) })
    assert.deepEqual(unwanted, [])
    assert.ok(packed.files.includes('docs/figures/zip-bomb.run.json'))
    // what docs/install.md says of its size
    assert.ok(packed.size < 1e6, `${packed.size} bytes packed: docs/install.md says under 1 MB`)
    const installed = fs.readdirSync(path.join(project, 'node_modules'))
    assert.deepEqual(DEV_DEPENDENCIES.filter(function present (name) { return installed.includes(name.split('/')[0]) && fs.existsSync(path.join(project, 'node_modules', name)) }), [])
    const pkg = JSON.parse(fs.readFileSync(path.join(project, 'node_modules', 'streamlab', 'package.json'), 'utf8'))
    assert.deepEqual(pkg.bin, { streamlab: 'bin/streamlab.js' })
  })

  it('answers --help, and each command\'s own --help', async function () {
    const help = await runLine('npx streamlab --help', { cwd: project })
    assert.equal(help.code, 0, help.stderr)
    assert.match(help.stdout, /^ {2}grade {2}/m)
    assert.match(help.stdout, new RegExp(`The lab writes to ${path.join(project, 'test-data').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
    for (const [command, said] of [['start', /Usage: node server\.js/], ['grade', /Usage: npm run grade --/], ['bench', /Usage: npm run bench --/], ['demo', /Usage: node scripts\/demo\.js/], ['runs', /Usage: npm run runs --/]]) {
      const run = await runLine(`npx streamlab ${command} --help`, { cwd: project })
      assert.equal(run.code, 0, `${command}: ${run.stderr}`)
      assert.match(run.stdout, said, command)
    }
    const wrong = await runLine('npx streamlab grades', { cwd: project })
    assert.equal(wrong.code, 2)
    assert.match(wrong.stderr, /no command "grades": one of start, grade, bench, demo, runs/)
  })

  it('serves the lessons\' runs from the installed lab: GET /runs lists lesson-zip-bomb, GET /runs/lesson-zip-bomb and npx streamlab runs read it', async function () {
    const lab = spawn(process.execPath, [path.join(project, 'node_modules', 'streamlab', 'bin', 'streamlab.js'), 'start', '--port', '0'], { cwd: project, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    const exited = once(lab, 'exit')
    try {
      let said = ''
      lab.stderr.on('data', function keep (chunk) { said += chunk })
      const url = await new Promise(function listening (resolve, reject) {
        lab.stdout.on('data', function read (chunk) {
          said += chunk
          const found = /streamlab listening on (http:\/\/\S+)/.exec(said)
          if (found) resolve(found[1])
        })
        exited.then(function died () { reject(new Error(`the installed lab exited before it listened: ${said}`)) })
      })
      const { runs } = await (await fetch(`${url}/runs`)).json()
      const lesson = runs.find(function zipBomb (r) { return r.id === 'lesson-zip-bomb' })
      assert.deepEqual([lesson?.lesson, lesson?.experiment, lesson?.invalid], [true, 'zip-bomb', undefined], JSON.stringify(runs))
      const res = await fetch(`${url}/runs/lesson-zip-bomb`)
      assert.equal(res.status, 200)
      assert.deepEqual(await res.json(), JSON.parse(fs.readFileSync(path.join(ROOT, 'docs', 'figures', 'zip-bomb.run.json'), 'utf8')))
    } finally {
      lab.kill('SIGTERM')
      await exited
    }
    const compared = await runLine('npx streamlab runs compare lesson-zip-bomb lesson-zip-bomb', { cwd: project })
    assert.equal(compared.code, 0, compared.stderr)
    assert.match(compared.stdout, /^A: lesson-zip-bomb {2}zip-bomb \(done, engine\)/m)
  })

  it('grades a Node service from the project, writes the JUnit a parser reads, and writes under the project, not node_modules', async function () {
    fs.copyFileSync(path.join(ROOT, 'examples', 'services', 'streaming.js'), path.join(project, 'service.js'))
    const run = await runLine('npx streamlab grade --url http://127.0.0.1:3171/ingest --start "node service.js" --quick --only correctness --json card.json --junit j.xml --out report', { cwd: project })
    assert.equal(run.code, 0, run.stdout + run.stderr)
    const card = JSON.parse(fs.readFileSync(path.join(project, 'card.json'), 'utf8'))
    assert.equal(card.verdict, 'pass')
    assert.equal(card.labVersion, JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version, 'the package\'s version: no commit of the project it sits in')
    assertJunitMatchesCard(fs.readFileSync(path.join(project, 'j.xml'), 'utf8'), card)
    if (PYTHON) assert.deepEqual(pythonReads(path.join(project, 'j.xml')), [`testsuites ${card.checks.length} 0`, `suite correctness ${card.checks.length} 0`])
    assert.ok(fs.existsSync(path.join(project, 'report', 'results.json')))
    // the reference lab's own data folder: under the project, never in the package
    assert.ok(fs.existsSync(path.join(project, 'test-data', 'grade')), 'test-data/grade/ in the project')
    assert.ok(!fs.existsSync(path.join(project, 'node_modules', 'streamlab', 'test-data')), 'nothing written into node_modules')
  })

  it('grades a Python service (the standard library alone), a failed check\'s figure, limit and hint in its JUnit failure', async function () {
    if (PYTHON === null) {
      console.log('      python3 is missing here: the Python service is not graded (install python3 to run this half)')
      this.skip()
    }
    fs.copyFileSync(path.join(ROOT, 'test', 'fixtures', 'services', 'ingest_service.py'), path.join(project, 'ingest_service.py'))
    // safety too: its bombs are refused only past 256 MiB inflated, so the JUnit has failures to carry
    const output = path.join(project, 'py-github-output')
    const run = await runLine('npx streamlab grade --url http://127.0.0.1:3172/ingest --start "python3 ingest_service.py" --quick --only correctness,safety --json py.json --junit py.xml --classroom --out py-report', { cwd: project, env: userEnv({ GITHUB_OUTPUT: output }) })
    assert.equal(run.code, 1, run.stdout + run.stderr)
    const card = JSON.parse(fs.readFileSync(path.join(project, 'py.json'), 'utf8'))
    assert.ok(card.checks.filter(function correctness (c) { return c.area === 'correctness' }).every(function passed (c) { return c.pass }), JSON.stringify(card.checks))
    const failed = card.checks.filter(function failed (c) { return !c.pass })
    assert.ok(failed.length > 0 && failed.every(function safety (c) { return c.area === 'safety' }), JSON.stringify(failed))
    assertJunitMatchesCard(fs.readFileSync(path.join(project, 'py.xml'), 'utf8'), card)
    const safety = card.checks.filter(function safety (c) { return c.area === 'safety' })
    assert.deepEqual(pythonReads(path.join(project, 'py.xml')), [
      `testsuites ${card.checks.length} ${failed.length}`,
      `suite correctness ${card.checks.length - safety.length} 0`,
      `suite safety ${safety.length} ${failed.length}`
    ])
    // partial credit: correctness's 24 points, and safety's 24 less each failed check's share
    const points = classroomPoints(output)
    assert.equal(points.text, `Points ${48 - failed.length * (24 / safety.length)}/48`)
    assert.deepEqual([points.results.status, points.failed], ['fail', true])
    assert.match(run.stdout, new RegExp(`^classroom: ${points.text} \\(${failed.length} of ${card.checks.length} tests failed\\)$`, 'm'))
  })
})
