/**
 * GET /runs and GET /runs/:id (routes/runs.js): the records in <dataDir>/runs/, newest first,
 * a file that is no record listed as such, and a record served only once checked. The records
 * here are written as the lab writes them (lib/runs/store.js); the engine writing them is
 * runs-recorder.test.js's, a real run test/slow/runs.test.js's.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { labInTempDir } from './helpers.js'
import { makeTestRecord } from './runs-helpers.js'

describe('GET /runs', function () {
  const lab = labInTempDir('runs-routes')
  let older
  let newer

  before(async function writeRecords () {
    const store = lab.app.locals.runRecorder.store
    older = makeTestRecord({ id: 'older-run', startedAt: 1_790_000_000_000 })
    await store.save('older-run', older.text)
    await sleep(20)
    newer = makeTestRecord({ id: 'newer-run', experiment: 'zip-bomb', startedAt: 1_790_000_100_000 })
    await store.save('newer-run', newer.text)
    await sleep(20)
    const dir = path.join(lab.dataDir, 'runs')
    fs.writeFileSync(path.join(dir, 'foreign.json'), JSON.stringify({ format: 1, items: [] }))
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a record, not listed')
  })

  it('lists the records newest first, with what a list shows of each, and a foreign file as not a record', async function () {
    const res = await fetch(`${lab.url}/runs`)
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('cache-control'), 'no-store')
    const body = await res.json()
    assert.equal(body.keep, 50)
    // the lessons' runs come after the lab's (runs-lessons.test.js)
    assert.deepEqual(body.runs.filter(function ofTheLab (r) { return !r.lesson }).map(function id (r) { return r.id }), ['foreign', 'newer-run', 'older-run'])
    assert.match(body.runs[0].invalid, /kind is not "streamlab\.run"/)
    assert.deepEqual(body.runs[1], {
      id: 'newer-run',
      experiment: 'zip-bomb',
      title: 'Buffered vs streamed gzip ingest',
      status: 'done',
      source: 'engine',
      startedAt: 1_790_000_100_000,
      date: new Date(1_790_000_100_000).toISOString(),
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      routes: ['bad', 'good'],
      bytes: Buffer.byteLength(newer.text)
    })
  })

  it('GET /runs/:id answers the record, as JSON that no browser takes for a page', async function () {
    const res = await fetch(`${lab.url}/runs/older-run`)
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type'), /^application\/json/)
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
    assert.deepEqual(await res.json(), older.record)
  })

  it('answers 422 run.invalid naming the field at fault for a file that is no record', async function () {
    const res = await fetch(`${lab.url}/runs/foreign`)
    assert.equal(res.status, 422)
    const { error } = await res.json()
    assert.equal(error.type, 'run.invalid')
    assert.equal(error.field, 'kind')
    assert.equal(error.run, 'foreign')
  })

  it('answers 404 run.not.found for an id it has not, and for anything that would be a path', async function () {
    for (const id of ['no-such-run', '..%2Fruns%2Folder-run', '.older-run', 'older-run.json']) {
      const res = await fetch(`${lab.url}/runs/${id}`)
      assert.equal(res.status, 404, id)
      const { error } = await res.json()
      assert.equal(error.type, 'run.not.found', id)
    }
  })

  describe('GET /runs/:id with a short id (the prefix a page shows)', function () {
    const one = '2f814b19-0c6e-4e53-9b1a-4d2f0a7c9e11'
    const twins = ['abcd1234-0000-4000-8000-000000000001', 'abcd1234-0000-4000-8000-000000000002']

    before(async function writeUuidRecords () {
      const store = lab.app.locals.runRecorder.store
      for (const id of [one, ...twins]) await store.save(id, makeTestRecord({ id }).text)
    })

    it('answers the record of the one id the prefix begins, with its whole id', async function () {
      for (const prefix of ['2f814b19', '2f8', one.slice(0, 20)]) {
        const res = await fetch(`${lab.url}/runs/${prefix}`)
        assert.equal(res.status, 200, prefix)
        assert.equal((await res.json()).id, one, prefix)
      }
    })

    it('answers 409 run.id.ambiguous naming the ids when the prefix begins several', async function () {
      const res = await fetch(`${lab.url}/runs/abcd1234`)
      assert.equal(res.status, 409)
      assert.match(res.headers.get('content-type'), /^application\/json/)
      const { error } = await res.json()
      assert.equal(error.type, 'run.id.ambiguous')
      assert.equal(error.id, 'abcd1234')
      assert.deepEqual(error.matches, twins)
    })

    it('answers 404 run.not.found when the prefix begins no id', async function () {
      const res = await fetch(`${lab.url}/runs/2f814b1a`)
      assert.equal(res.status, 404)
      assert.equal((await res.json()).error.type, 'run.not.found')
    })
  })
})
