/**
 * The defaults the docs quote are the code's: every option's and flag's default quoted beside its
 * name in README.md, docs/ and exercises/, every experiment param's in its `| param |` table, every
 * flag's in `node server.js --help-all`, and no fixed size given to the default memory budget. How
 * a quote is found and read is test/quoted-defaults.js's; the first specs hold the reader itself.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { DEFAULTS } from '../lib/config/options.js'
import { FLAGS, OPTIONS, ROOT, docFiles, fixedBudgetSentences, scanDocs, scanMarkdown, scanUsage } from './quoted-defaults.js'

describe('the defaults the docs quote are the code\'s', function () {
  it('knows every option and flag: the code gives the table, lib/config/flags.js the flags', function () {
    for (const name of ['limits.record', 'limits.ratioAfter', 'ingest.bufferBudget', 'ingest.queueMs', 'server.maxConnections', 'metrics.maxClients', 'upload.maxAgeMs', 'database.maxRows', 'restartBackoffMs']) {
      assert.ok(OPTIONS.has(name), `the option table has ${name}`)
    }
    assert.equal(OPTIONS.get('limits.record').value, DEFAULTS.limits.record)
    assert.equal(FLAGS.get('--buffer-budget'), 'ingest.bufferBudget')
    assert.equal(FLAGS.get('--limit-record'), 'limits.record')
    assert.equal(FLAGS.get('--max-connections'), 'server.maxConnections')
    assert.equal(FLAGS.get('--restart-window'), 'restartWindowMs')
    assert.equal(FLAGS.get('--memory-limit'), 'memoryLimit')
    assert.ok(FLAGS.size >= 18, `server.js's readConfig maps its flags to options (found ${FLAGS.size})`)
  })

  it('finds each default a page quotes beside a name, and only those', function () {
    const page = [
      'The budget (`ingest.bufferBudget`, 16 MiB) caps the batches; once `limits.ratioAfter` (16 MiB)',
      'are inflated the ratio counts. A record is 4 MiB (`limits.record`) at most.',
      'Uploads go after `upload.maxAgeMs` (app option, default 60 min). Run `npm start -- --limit-record 8MiB`',
      'to raise it; `limits.compressed`: 413 [`entity.too.large`](errors.md).',
      '',
      '```sh',
      'npm start -- --buffer-budget=32MiB',
      '```',
      '',
      '| what | default | past it |',
      '| --- | --- | --- |',
      '| inflated / compressed, `limits.ratio`, checked from `limits.ratioAfter` | 200, from 16 MiB inflated | 413 |',
      '| open connections | 512 (`--max-connections`) | 503 |',
      '| threads | the cores, at most 4 (`--parse-threads`) | |'
    ].join('\n')
    const found = scanMarkdown('page.md', page)
    const quoted = found.map(function said (q) { return `${q.line} ${q.option} ${q.quoted}` })
    assert.deepEqual(quoted, [
      '1 ingest.bufferBudget 16 MiB',
      '1 limits.ratioAfter 16 MiB',
      '2 limits.record 4 MiB',
      '3 upload.maxAgeMs 60 min',
      '12 limits.ratio 200',
      '12 limits.ratioAfter 16 MiB',
      '13 server.maxConnections 512'
    ])
    assert.deepEqual(found.filter(function wrong (q) { return q.problem !== null }), [])
  })

  it('fails on a doc line that quotes another default, naming its file and line', function () {
    const page = [
      'Intro.',
      '',
      'One value may be as large as `limits.record` (16 MiB); the lab holds',
      'its batches within the buffer budget (`--buffer-budget`, default 32MiB).',
      '',
      '| flag | default |',
      '| --- | --- |',
      '| `--queue-timeout T` | 30s |',
      '| `--parse-threads N` | 2 |'
    ].join('\n')
    const problems = scanMarkdown('docs/made-up.md', page).map(function problem (q) { return q.problem }).filter(Boolean)
    assert.equal(problems.length, 4, problems.join('\n'))
    assert.match(problems[0], /^docs\/made-up\.md:3: limits\.record quoted as 16 MiB; the code's default is 4194304 \(4\.0 MiB\)/)
    assert.match(problems[1], /^docs\/made-up\.md:4: ingest\.bufferBudget quoted as 32 MiB/)
    assert.match(problems[2], /^docs\/made-up\.md:8: ingest\.queueMs quoted as 30 s; the code's default is 10000/)
    assert.match(problems[3], /^docs\/made-up\.md:9: parseThreads quoted as 2; its default depends on the machine/)
    const budget = fixedBudgetSentences('docs/made-up.md', 'Start the lab with `npm start`. Its memory budget is 1 GiB: past it,\nthe worker is killed.\n')
    assert.equal(budget.length, 1)
    assert.match(budget[0], /^docs\/made-up\.md:1: the default memory budget given as a fixed size/)
    assert.deepEqual(fixedBudgetSentences('x.md', 'With a budget of 1 GiB (the default on a machine with 4 GiB or less), it is killed.\n'), [])
    const usage = [
      'Usage: node server.js [options]',
      '',
      '  --limit-record SZ      largest single record /good gathers for a parse thread (default',
      '                         8MiB)',
      '  --restart-window T     a worker up this long starts the delays again (default 60s)'
    ].join('\n')
    const wrong = scanUsage(usage).map(function problem (q) { return q.problem }).filter(Boolean)
    assert.equal(wrong.length, 1, wrong.join('\n'))
    assert.match(wrong[0], /^server\.js --help-all:3: limits\.record quoted as 8 MiB; the code's default is 4194304/)
  })

  it('README.md, docs/ and exercises/ quote each option\'s and flag\'s default as the code has it', function () {
    const found = scanDocs()
    // so that it cannot pass by finding nothing: the docs quote dozens of defaults beside their names
    assert.ok(found.length >= 60, `the scanner found ${found.length} quoted defaults`)
    for (const option of ['limits.record', 'ingest.bufferBudget', 'limits.ratioAfter', 'ingest.queueMs', 'server.maxConnections']) {
      assert.ok(found.some(function quotes (q) { return q.option === option }), `the docs quote ${option}'s default somewhere`)
    }
    const problems = found.map(function problem (q) { return q.problem }).filter(Boolean)
    assert.deepEqual(problems, [], `defaults quoted in the docs that are not the code's:\n${problems.join('\n')}`)
  })

  it('the experiments\' param tables give each param its schema default', function () {
    const found = scanDocs().filter(function isParam (q) { return q.option.includes(' ') })
    assert.ok(found.length >= 30, `the scanner found ${found.length} params in the docs' | param | tables`)
    const problems = found.map(function problem (q) { return q.problem }).filter(Boolean)
    assert.deepEqual(problems, [])
  })

  it('server.js --help-all gives each flag its option\'s default', function () {
    const text = execFileSync(process.execPath, [path.join(ROOT, 'server.js'), '--help-all'], { encoding: 'utf8' })
    const found = scanUsage(text)
    assert.ok(found.length >= 18, `--help-all quotes ${found.length} defaults`)
    const problems = found.map(function problem (q) { return q.problem }).filter(Boolean)
    assert.deepEqual(problems, [], problems.join('\n'))
  })

  it('no doc gives the default memory budget a fixed size: it is relative to the machine', function () {
    const problems = docFiles().flatMap(function scanFile (file) { return fixedBudgetSentences(file, fs.readFileSync(path.join(ROOT, file), 'utf8')) })
    assert.deepEqual(problems, [], problems.join('\n'))
  })
})
