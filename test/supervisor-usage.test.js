/**
 * server.js refuses a bad command line with exit 2 and its usage, before any
 * worker starts: --unsafe-bad without a memory budget, a database URL that is
 * not postgres://, an unknown --share-parse, a budget an idle worker would
 * not fit in; and its usage says what the default budget is on this machine.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { defaultMemoryBudget } from '../lib/limits/memory-budget.js'
import { formatMemory } from '../lib/util/units.js'

const run = promisify(execFile)
const SERVER = fileURLToPath(new URL('../server.js', import.meta.url))

describe('the supervisor (server.js)', function () {
  this.timeout(60000)

  it('refuses --unsafe-bad without a memory budget (exit 2)', async function () {
    for (const flags of [['--unsafe-bad', '--memory-limit=0'], ['--unsafe-bad', '--no-memory-limit']]) {
      await assert.rejects(run(process.execPath, [SERVER, '--port', '0', ...flags]), function check (err) {
        assert.equal(err.code, 2, flags.join(' '))
        assert.match(err.stderr, /--unsafe-bad needs a memory budget/)
        return true
      })
    }
  })

  it('refuses a database URL that is not postgres:// as a usage error naming its source (exit 2), before any worker starts', async function () {
    const cases = [
      [['--database-url', 'foo'], {}, /--database-url must be a postgres:\/\/ or postgresql:\/\/ URL, got "foo"/],
      [[], { DATABASE_URL: 'mysql://lab:secret@db/lab' }, /DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL, got "mysql:\/\/lab:\*\*\*@db\/lab"/]
    ]
    for (const [flags, env, message] of cases) {
      await assert.rejects(run(process.execPath, [SERVER, '--port', '0', ...flags], { env: { ...process.env, ...env } }), function check (err) {
        assert.equal(err.code, 2, err.stderr)
        assert.match(err.stderr, message)
        assert.match(err.stderr, /^Usage: node server\.js/m)
        assert.doesNotMatch(err.stderr, /secret/, 'no password shown')
        assert.doesNotMatch(err.stderr, /\n\s+at /, 'no stack trace')
        return true
      })
    }
  })

  it('refuses a --share-parse other than busy, always or never (exit 2), naming the choices', async function () {
    await assert.rejects(run(process.execPath, [SERVER, '--port', '0', '--share-parse', 'sometimes']), function check (err) {
      assert.equal(err.code, 2, err.stderr)
      assert.match(err.stderr, /ingest\.shareParse must be one of busy, always, never, got "sometimes"/)
      assert.match(err.stderr, /^Usage: node server\.js/m)
      return true
    })
  })

  it('says in its usage what the default budget is on this machine', async function () {
    const { stdout } = await run(process.execPath, [SERVER, '--help'])
    // the meaning is wrapped to the screen: read it as one line
    assert.ok(stdout.replace(/\s+/g, ' ').includes(`default a quarter of this machine's memory, at least 1 GiB; here: ${formatMemory(defaultMemoryBudget())})`), stdout)
    assert.match((await run(process.execPath, [SERVER, '--help-all'])).stdout, /--restart-backoff T/)
  })

  it('refuses a budget an idle worker would not fit in, or that is not a size (exit 2)', async function () {
    for (const limit of ['10MiB', 'lots']) {
      await assert.rejects(run(process.execPath, [SERVER, '--port', '0', `--memory-limit=${limit}`]), function check (err) {
        assert.equal(err.code, 2, limit)
        return true
      })
    }
  })
})
