/**
 * Where the lab writes (lib/util/project-root.js): test-data/ beside the code in
 * a checkout; installed as a package (its root inside node_modules), test-data/
 * under the folder it was started from, never inside node_modules;
 * STREAMLAB_DATA_DIR, which the streamlab command sets for the processes it
 * starts, wins either way.
 */
import assert from 'node:assert/strict'
import path from 'node:path'
import { DATA_DIR_ENV, defaultDataDir, isInstalled, outputRoot } from '../../lib/util/project-root.js'

const CHECKOUT = path.resolve('/home/ada/streamlab')
const INSTALLED = path.resolve('/srv/service/node_modules/streamlab')
const CWD = path.resolve('/srv/service')

describe('lib/util/project-root.js', function () {
  it('tells a checkout from a package installed in node_modules', function () {
    assert.equal(isInstalled(CHECKOUT), false)
    assert.equal(isInstalled(INSTALLED), true)
    assert.equal(isInstalled(path.resolve('/srv/node_modules_backup/streamlab')), false)
  })

  it('writes beside the code in a checkout, under the current folder when installed', function () {
    assert.equal(defaultDataDir({ root: CHECKOUT, cwd: CWD, env: {} }), path.join(CHECKOUT, 'test-data'))
    assert.equal(defaultDataDir({ root: INSTALLED, cwd: CWD, env: {} }), path.join(CWD, 'test-data'))
    assert.equal(outputRoot({ root: CHECKOUT, cwd: CWD }), CHECKOUT)
    assert.equal(outputRoot({ root: INSTALLED, cwd: CWD }), CWD)
  })

  it('takes STREAMLAB_DATA_DIR first, relative to the current folder', function () {
    assert.equal(defaultDataDir({ root: INSTALLED, cwd: CWD, env: { [DATA_DIR_ENV]: 'out/lab' } }), path.join(CWD, 'out', 'lab'))
    assert.equal(defaultDataDir({ root: CHECKOUT, cwd: CWD, env: { [DATA_DIR_ENV]: '/tmp/lab' } }), path.resolve('/tmp/lab'))
    assert.equal(defaultDataDir({ root: CHECKOUT, cwd: CWD, env: { [DATA_DIR_ENV]: '' } }), path.join(CHECKOUT, 'test-data'))
  })
})
