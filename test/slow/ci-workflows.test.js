/**
 * The CI files docs/grading-in-ci.md and docs/grading-a-class.md give
 * (docs/ci/): each one's commands, read from its YAML (a GitHub step's `run:`,
 * a GitLab job's `script:`), run in order in a temporary project as the
 * runner's shell would run them, with the lab's packed tarball where the file
 * names the package (STREAMLAB_PACKAGE). Three things differ from a real run,
 * each to keep this spec to a minute: the grading gets `--only correctness`
 * (the classroom's points: `--only correctness,memory`, a buffering and a
 * streaming handler), the URL's port is a free one, and npm reads its cache
 * first. The classroom's grading step's outputs are handed to GitHub
 * Classroom's reporter as its step does, decoded and totalled as the reporter
 * does (test/classroom-reporter.js). Then the classroom's cards are collected
 * as a teacher would (`streamlab grade --collect`), a tampered submission
 * among them refused.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseCsv } from '../csv.js'
import { elementsNamed, readXml } from '../xml.js'
import { ciCommands, openTempDir, packLab, runLine, userEnv } from '../package-helpers.js'
import { classroomTotals, parseRunnerResults, readStepOutputs, reporterStep } from '../classroom-reporter.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CI = path.join(ROOT, 'docs', 'ci')
/** The handlers the classroom's points are read for: exercise 1's starter buffers, its solution streams. */
const HANDLERS = Object.freeze({ buffering: 'exercises/01-stream/starter.js', streaming: 'exercises/01-stream/solution-stream.js' })

/** A port nothing listens on now. */
function freePort () {
  return new Promise(function listen (resolve, reject) {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', function listening () {
      const { port } = server.address()
      server.close(function closed () { resolve(port) })
    })
  })
}

/** The file's commands as this spec runs them: the grading cut to `only` (correctness), on a free port. */
async function commandsOf (file, only = 'correctness') {
  const port = await freePort()
  return ciCommands(fs.readFileSync(path.join(CI, file), 'utf8')).map(function forTheSpec (line) {
    if (!/\bstreamlab grade\b/.test(line)) return line
    return `${line.replace(/127\.0\.0\.1:\d+/g, `127.0.0.1:${port}`)} --only ${only}`
  })
}

/** Run `commands` in `project` one by one, each to succeed, as the runner would. */
async function runAll (commands, project, tarball, extraEnv = {}) {
  const env = userEnv({ STREAMLAB_PACKAGE: tarball, ...extraEnv })
  for (const line of commands) {
    const run = await runLine(line, { cwd: project, env })
    assert.equal(run.code, 0, `${line}\n${run.stdout}\n${run.stderr}`)
  }
}

/**
 * The points GitHub Classroom shows for a project graded by github-classroom.yml: its grading
 * step's outputs (the file GITHUB_OUTPUT named) handed to the reporter as the workflow's reporter
 * step hands them (its env: and runners:), decoded and totalled as the reporter does.
 */
function pointsOf (project) {
  const step = reporterStep(fs.readFileSync(path.join(CI, 'github-classroom.yml'), 'utf8'))
  const outputs = readStepOutputs(fs.readFileSync(path.join(project, 'github-output'), 'utf8'))
  const env = Object.fromEntries(Object.entries(step.env).map(function fromStep ([name]) { return [name, outputs.result] }))
  const decoded = parseRunnerResults(step.runners, env)
  return { ...classroomTotals(decoded), results: decoded[0].results }
}

/** A project of its own: a package.json, and the lock `npm ci` needs. */
function newProject (dir, name) {
  const project = path.join(dir, name)
  fs.mkdirSync(project, { mode: 0o755 })
  const pkg = { name, version: '1.0.0', private: true }
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
  fs.writeFileSync(path.join(project, 'package-lock.json'), JSON.stringify({ name, version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': pkg } }, null, 2) + '\n')
  return project
}

/** The card and the JUnit a grading step left: valid, passing, a testcase per check. */
function assertCardAndJunit (project) {
  const card = JSON.parse(fs.readFileSync(path.join(project, 'card.json'), 'utf8'))
  assert.equal(card.verdict, 'pass', JSON.stringify(card.checks))
  const cases = elementsNamed(readXml(fs.readFileSync(path.join(project, 'junit.xml'), 'utf8')), 'testcase')
  assert.equal(cases.length, card.checks.length)
  return card
}

describe('the CI files in docs/ci/, their commands run', function () {
  this.timeout(240_000)
  let dir
  let tarball

  before(async function pack () {
    dir = openTempDir('streamlab-ci-')
    tarball = (await packLab(dir)).tarball
  })

  after(function removeAll () {
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  it('reads a step\'s run: and a job\'s script: items, in order', function () {
    assert.deepEqual(ciCommands([
      'steps:',
      '  - uses: actions/checkout@v4',
      '  - run: npm ci',
      '  - name: two lines',
      '    run: |',
      '      echo one',
      '      echo two',
      'job:',
      '  script:',
      '    - npm test',
      '    - echo "done"',
      '  artifacts:',
      '    paths:',
      '      - card.json'
    ].join('\n')), ['npm ci', 'echo one\necho two', 'npm test', 'echo "done"'])
  })

  for (const file of ['github-actions.yml', 'gitlab-ci.yml']) {
    it(`${file}: installs the tarball, starts the service, grades it, and leaves the card and the JUnit`, async function () {
      const project = newProject(dir, path.basename(file, '.yml'))
      fs.copyFileSync(path.join(ROOT, 'examples', 'services', 'streaming.js'), path.join(project, 'service.js'))
      const commands = await commandsOf(file)
      assert.ok(commands.some(function installs (l) { return l.includes('"$STREAMLAB_PACKAGE"') }), 'the package is named by STREAMLAB_PACKAGE')
      await runAll(commands, project, tarball)
      assertCardAndJunit(project)
      assert.ok(fs.readdirSync(path.join(project, 'test-data', 'grade')).length > 0, 'the report, kept as an artifact')
    })
  }

  describe('github-classroom.yml, and the cards collected', function () {
    let repos
    let seed

    before(async function gradeTwoStudents () {
      const text = fs.readFileSync(path.join(CI, 'github-classroom.yml'), 'utf8')
      seed = /CLASS_SEED: "(\d+)"/.exec(text)[1]
      repos = {}
      for (const student of ['alice', 'bob']) {
        const project = newProject(dir, student)
        fs.mkdirSync(path.join(project, 'src'))
        // a handler that imports an allowed package, hoisted to the project's node_modules
        fs.copyFileSync(path.join(ROOT, 'exercises', '01-stream', 'solution-library.js'), path.join(project, 'src', 'handler.mjs'))
        await runAll(await commandsOf('github-classroom.yml'), project, tarball, { CLASS_SEED: seed, GITHUB_OUTPUT: path.join(project, 'github-output') })
        repos[student] = project
      }
    })

    it('grades the student\'s handler from the installed package with the class\'s seed, and keeps the card', function () {
      const card = assertCardAndJunit(repos.alice)
      assert.equal(card.handler, 'src/handler.mjs')
      assert.equal(String(card.seed), seed)
      assert.match(card.sha256, /^[0-9a-f]{64}$/)
      assert.equal(pointsOf(repos.alice).text, 'Points 24/24', 'correctness only: its 24 points')
    })

    it('collects the cards into the class table, and refuses the one whose submission changed after grading', async function () {
      const cards = path.join(dir, 'cards')
      for (const [student, project] of Object.entries(repos)) {
        // what upload-artifact kept: card.json, junit.xml and src/, at their paths
        fs.mkdirSync(path.join(cards, student, 'src'), { recursive: true })
        for (const file of ['card.json', 'junit.xml', path.join('src', 'handler.mjs')]) fs.copyFileSync(path.join(project, file), path.join(cards, student, file))
      }
      fs.appendFileSync(path.join(cards, 'bob', 'src', 'handler.mjs'), '\n// changed after the run\n')
      const run = await runLine(`npx streamlab grade --collect ${JSON.stringify(cards)} --seed ${seed} --quick --only correctness --csv ${JSON.stringify(path.join(dir, 'table', 'class.csv'))}`, { cwd: repos.alice })
      assert.equal(run.code, 1, run.stdout + run.stderr)
      const [header, ...rows] = parseCsv(fs.readFileSync(path.join(dir, 'table', 'class.csv'), 'utf8'))
      const row = function row (name) { return Object.fromEntries(header.map(function pair (column, k) { return [column, rows.find(function named (r) { return r[0] === name })[k]] })) }
      assert.deepEqual([row('alice').verdict, row('alice').correctness, row('alice').error], ['pass', 'pass', ''])
      assert.equal(row('bob').verdict, 'refused')
      assert.match(row('bob').error, /^not collected: src\/handler\.mjs beside the card is not the file graded/)
      assert.match(run.stdout, /^2 entries collected for seed \d+: 1 passed, 1 refused$/m)
    })
  })

  describe('github-classroom.yml: the points GitHub Classroom shows', function () {
    const points = {}

    before(async function gradeBufferingAndStreaming () {
      // a deadline for a run that is stuck, not a speed target: beside other gradings on a 2-core
      // machine one of these took over three minutes
      this.timeout(900_000)
      const text = fs.readFileSync(path.join(CI, 'github-classroom.yml'), 'utf8')
      const seed = /CLASS_SEED: "(\d+)"/.exec(text)[1]
      // memory graded too (the area a buffering handler fails), one after the other: side by side on
      // a busy 2-core machine, the grader's own lab missed its start deadline
      for (const [kind, file] of Object.entries(HANDLERS)) {
        const project = newProject(dir, `classroom-${kind}`)
        fs.mkdirSync(path.join(project, 'src'))
        fs.copyFileSync(path.join(ROOT, file), path.join(project, 'src', 'handler.mjs'))
        const env = userEnv({ STREAMLAB_PACKAGE: tarball, CLASS_SEED: seed, GITHUB_OUTPUT: path.join(project, 'github-output') })
        for (const line of await commandsOf('github-classroom.yml', 'correctness,memory')) {
          const run = await runLine(line, { cwd: project, env, timeoutMs: 600_000 })
          const grading = /\bstreamlab grade\b/.test(line)
          // a grading exits 1 when a check fails; its step goes on (continue-on-error) to the reporter's
          assert.equal(run.code, grading && kind === 'buffering' ? 1 : 0, `${line}\n${run.stdout}\n${run.stderr}`)
          if (grading) assert.match(run.stdout, /^classroom: Points \d+\/48 \(\d+ of 10 tests failed\)$/m, `${kind}: ${run.stderr}`)
        }
        points[kind] = pointsOf(project)
      }
      if (process.env.STREAMLAB_CLASSROOM_POINTS) console.log(Object.fromEntries(Object.entries(points).map(function said ([kind, p]) { return [kind, p.text] })))
    })

    it('hands the grading step\'s result to the reporter by the step\'s id, as the reporter\'s README shows', function () {
      const text = fs.readFileSync(path.join(CI, 'github-classroom.yml'), 'utf8')
      const step = reporterStep(text)
      assert.match(step.uses, /^classroom-resources\/autograding-grading-reporter@v1$/)
      assert.deepEqual(step.env, { GRADE_RESULTS: 'grade' })
      assert.equal(step.runners, 'grade')
      assert.match(text, /^ {6}- name: Grade the handler\n {8}id: grade\n {8}run: npx streamlab grade .* --classroom\n(?: {8}#.*\n)* {8}continue-on-error: true$/m)
      assert.match(text, /^ {2}run-autograding-tests:$/m, 'the check run the reporter posts the points to')
    })

    it('a buffering handler (exercise 1\'s starter): partial credit, Points 24/48, each memory test failed at its line with the fix', function () {
      const { text, failed, results } = points.buffering
      assert.equal(text, 'Points 24/48')
      assert.equal(failed, true)
      assert.equal(results.status, 'fail')
      const memory = results.tests.filter(function inMemory (t) { return t.name.startsWith('memory: ') })
      assert.deepEqual(memory.map(function status (t) { return [t.status, t.score, t.max_score] }), [['fail', 0, 12], ['fail', 0, 12]])
      for (const test of memory) {
        assert.equal(test.filename, 'src/handler.mjs')
        assert.ok(test.line_no > 0, JSON.stringify(test))
        assert.match(test.message, new RegExp(`Your line: src/handler\\.mjs:${test.line_no} in \\S+: .* Fix: [^.]+`))
      }
      assert.ok(results.tests.filter(function inCorrectness (t) { return t.name.startsWith('correctness: ') }).every(function passed (t) { return t.status === 'pass' && t.score === 3 }))
    })

    it('a streaming handler (exercise 1\'s solution): full marks, Points 48/48', function () {
      const { text, failed, results } = points.streaming
      assert.equal(text, 'Points 48/48')
      assert.equal(failed, false)
      assert.equal(results.status, 'pass')
      assert.equal(results.tests.length, 10)
    })
  })
})
