/**
 * The CI files docs/grading-in-ci.md and docs/grading-a-class.md give
 * (docs/ci/): each one's commands, read from its YAML (a GitHub step's `run:`,
 * a GitLab job's `script:`), run in order in a temporary project as the
 * runner's shell would run them, with the lab's packed tarball where the file
 * names the package (STREAMLAB_PACKAGE). Three things differ from a real run,
 * each to keep this spec to a minute: the grading gets `--only correctness`,
 * the URL's port is a free one, and npm reads its cache first. Then the
 * classroom's cards are collected as a teacher would (`streamlab grade
 * --collect`), a tampered submission among them refused.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseCsv } from '../csv.js'
import { elementsNamed, readXml } from '../xml.js'
import { ciCommands, openTempDir, packLab, runLine, userEnv } from '../package-helpers.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CI = path.join(ROOT, 'docs', 'ci')

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

/** The file's commands as this spec runs them: the grading cut to correctness, on a free port. */
async function commandsOf (file) {
  const port = await freePort()
  return ciCommands(fs.readFileSync(path.join(CI, file), 'utf8')).map(function forTheSpec (line) {
    if (!/\bstreamlab grade\b/.test(line)) return line
    return `${line.replace(/127\.0\.0\.1:\d+/g, `127.0.0.1:${port}`)} --only correctness`
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
        await runAll(await commandsOf('github-classroom.yml'), project, tarball, { CLASS_SEED: seed })
        repos[student] = project
      }
    })

    it('grades the student\'s handler from the installed package with the class\'s seed, and keeps the card', function () {
      const card = assertCardAndJunit(repos.alice)
      assert.equal(card.handler, 'src/handler.mjs')
      assert.equal(String(card.seed), seed)
      assert.match(card.sha256, /^[0-9a-f]{64}$/)
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
})
