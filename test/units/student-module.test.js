/**
 * Loading a submission's module (grader/student/student-route.js
 * loadStudentModule): a handler or an express.Router(), and for a module that
 * does not load, a reason a student can act on. Modules written to a
 * temporary folder, outside the lab, and imported by this process.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { loadStudentModule } from '../../grader/student/student-route.js'

describe('loadStudentModule', function () {
  let dir

  before(function makeFolder () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-module-'))
  })

  after(function removeFolder () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  function write (name, text) {
    const file = path.join(dir, name)
    fs.writeFileSync(file, text)
    return file
  }

  it('takes a default export that is a function as a handler, and module.exports of a CommonJS file', async function () {
    const esm = await loadStudentModule(write('esm.mjs', 'export default function handler (req, res) { res.end() }\n'))
    assert.equal(esm.kind, 'handler')
    const cjs = await loadStudentModule(write('cjs.cjs', 'module.exports = function handler (req, res) { res.end() }\n'))
    assert.equal(cjs.kind, 'handler')
  })

  it('names a package Node cannot find, and the ones the grader adds, for import and require() alike', async function () {
    const imports = write('imports.mjs', "import { parser } from 'stream-json'\nexport default function h () {}\n")
    await assert.rejects(loadStudentModule(imports), /^Error: imports\.mjs did not load: it imports stream-json, which Node cannot find from its folder; the grader adds only raw-body, @streamparser\/json, express to Node's own modules/)
    const requires = write('requires.cjs', "require('@scope/not-here/deep')\nmodule.exports = function h () {}\n")
    await assert.rejects(loadStudentModule(requires), /did not load: it imports @scope\/not-here, which Node cannot find/)
  })

  it('keeps Node\'s own words for a file of the submission\'s that is missing, and for an error it throws', async function () {
    const relative = write('relative.mjs', "import './not-here.js'\nexport default function h () {}\n")
    await assert.rejects(loadStudentModule(relative), /did not load: Error \[ERR_MODULE_NOT_FOUND\]: Cannot find module '.*not-here\.js'/)
    const throws = write('throws.mjs', "throw new RangeError('at load')\n")
    await assert.rejects(loadStudentModule(throws), /did not load: RangeError: at load/)
  })

  it('refuses a default export that is not a function, saying what it should be', async function () {
    await assert.rejects(loadStudentModule(write('object.mjs', 'export default { handler () {} }\n')), /has no default export that is a function: export default async function handler \(req, res\)/)
  })
})
