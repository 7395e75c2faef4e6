/** Grade a handler: the student's module at POST /student, isolated and measured from outside, beside a reference lab. */
import path from 'node:path'
import { withSeed } from '../checks/bodies.js'
import { HANDLER_CONTRACT } from '../checks/contract.js'
import { newSeed, normalizeSeed } from '../checks/settings.js'
import { GradeLab } from '../student/grade-lab.js'
import { LabCopy } from '../student/lab-copy.js'
import { fileDigest, submissionDigest } from '../student/digest.js'
import { newCard, runChecks, runSetup } from './run-checks.js'

/** Grade the handler in `file`; its options are listed in grader/run/README.md. */
export function grade (file, options = {}) {
  const seed = options.seed === undefined || options.seed === null ? newSeed() : normalizeSeed(options.seed)
  return withSeed(seed, function gradeWithSeed () { return gradeRun(file, options, seed) })
}

async function gradeRun (file, options, seed) {
  const given = options.labCopy ?? null
  const labCopy = given ?? new LabCopy()
  try {
    return await gradeWithLab(file, options, seed, labCopy)
  } finally {
    if (given === null) labCopy.close()
  }
}

async function gradeWithLab (file, options, seed, labCopy) {
  const { preset, settings, checks, run, labDir, host } = runSetup(options)
  // the digest before the load: the bytes graded, whatever happens to the file during the run (null: unreadable,
  // the load says why); its modules' bytes are all the grader reads of a line its process names
  const unreadable = function unreadable () { return null }
  const read = options.sources === undefined ? await submissionDigest(file).catch(unreadable) : null
  const digest = read !== null ? read.sha256 : options.sources === undefined ? null : await fileDigest(file).catch(unreadable)
  const lab = new GradeLab({
    handler: file, port: options.port ?? 0, host, dataDir: labDir, budget: settings.memoryBudget,
    isolation: options.isolation, labCopy, sources: options.sources ?? read?.sources ?? new Map(), onCancel: run.cancel
  })
  const card = await newCard({ handler: file, preset, areas: options.areas, settings, seed, digest, started: run.started })
  return runChecks({
    card,
    lab,
    checks,
    run,
    options,
    params: { handler: path.basename(file), preset },
    startFailure: 'LOAD_FAILED',
    findContract: async function handlerContract () { return HANDLER_CONTRACT }
  })
}
