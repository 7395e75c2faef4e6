#!/usr/bin/env node
/** The student's process: the module at POST /student and nothing else of the lab; command line in student/README.md. */
import { parseArgs } from 'node:util'
import express from 'express'
import { DEFAULTS } from '../../lib/config/options.js'
import { notFound } from '../../lib/errors/index.js'
import { sendError } from '../../lib/http/send-error.js'
import { bodyDeadline } from '../../lib/limits/body-deadline.js'
import { createLabServer } from '../../lib/http/server.js'
import { startSiteWriter } from './sites-writer.js'
import { EXIT_LOAD_FAILED, LOAD_FAILED_MARK, loadStudentModule, studentRoutes } from './student-route.js'

async function main () {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'listen-fd': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      'allocation-sites': { type: 'string' },
      prefer: { type: 'string' }
    }
  })
  if (positionals.length !== 1 || (values['listen-fd'] === undefined) === (values.port === undefined)) {
    process.stderr.write('grader/student/student-child.js is started by the grader (npm run grade -- handler.js): ' +
      'one handler, and --listen-fd or --port\n')
    process.exitCode = 2
    return
  }
  // the grader holds our stdin: when it goes, so do we (setpriv's parent-death signal does it too, where it is)
  process.stdin.on('end', function graderGone () { process.exit(0) })
  process.stdin.on('error', function graderGone () { process.exit(0) })
  process.stdin.resume()
  process.on('SIGUSR2', function collectGarbage () {
    if (typeof globalThis.gc !== 'function') return
    // two full collections: the first may leave what finalizers freed for the second
    globalThis.gc()
    globalThis.gc()
  })

  if (values['allocation-sites'] !== undefined) {
    startSiteWriter({ file: values['allocation-sites'], preferFiles: values.prefer === undefined ? null : [values.prefer] })
  }

  let student
  try {
    student = await loadStudentModule(positionals[0])
  } catch (err) {
    process.stderr.write(`${LOAD_FAILED_MARK}${err.message.replace(/\n/g, ' | ')}\n`)
    process.exit(EXIT_LOAD_FAILED)
  }

  const app = express()
  app.disable('x-powered-by')
  app.set('case sensitive routing', true)
  app.set('strict routing', true)
  // a body that stops is bounded in time as in the lab, but not the rate floor: the grader's tiny writes are slow on purpose
  app.use(bodyDeadline({ ...DEFAULTS.limits, minBodyRate: 0 }))
  app.use(studentRoutes(student))
  app.use(function routeNotFound (req, res, next) {
    next(notFound(req.method, req.path))
  })
  // as the lab answers errors: an error's own 4xx status, else 500, as JSON (docs/lessons/grade.md)
  app.use(sendError)
  const server = createLabServer(app)
  server.once('error', function listenFailed (err) {
    process.stderr.write(`student-child: ${err.message}\n`)
    process.exit(1)
  })
  const where = values['listen-fd'] !== undefined ? { fd: Number(values['listen-fd']) } : { port: Number(values.port), host: values.host }
  server.listen(where, function listening () {
    console.log(`student server: POST /student is ${positionals[0]} (${student.kind}), pid ${process.pid}`)
  })
}

main().catch(function crash (err) {
  process.stderr.write(`student-child: ${err.stack ?? err}\n`)
  process.exit(1)
})
