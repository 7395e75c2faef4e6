/**
 * Grade a handler: the student's module at POST /student in a process of
 * its own, isolated and measured from outside (grader/student/), beside a
 * reference lab with the lab's routes and the dashboard that shows the run;
 * answers judged by the lab's own contract for a handler.
 */
import path from 'node:path'
import { withSeed } from '../checks/bodies.js'
import { HANDLER_CONTRACT } from '../checks/contract.js'
import { newSeed, normalizeSeed } from '../checks/settings.js'
import { GradeLab } from '../student/grade-lab.js'
import { LabCopy } from '../student/lab-copy.js'
import { fileDigest, submissionDigest } from '../student/digest.js'
import { newCard, runChecks, runSetup } from './run-checks.js'

/**
 * Grade the handler in `file`.
 * @param {string} file the student's module
 * @param {{ preset?: 'full'|'quick', settings?: object, areas?: string[], port?: number, host?: string,
 *   inputDir?: string, dataDir?: string, keepOpenMs?: number, seed?: number, isolation?: { user?: boolean, network?: boolean },
 *   labCopy?: LabCopy, sources?: Map<string, Buffer>, contentType?: string,
 *   onProgress?: (event: object) => void }} [options]
 *   `settings`: overrides of the preset (grader/checks/settings.js); `areas`: only these areas' checks (all by
 *   default); `seed`: the seed every body of the run is drawn from (grader/checks/bodies.js; a new random one
 *   by default); `inputDir`: where generated documents are kept (by default a folder of the run's own
 *   under test-data/grade/inputs/, removed when it ends; a caller that gives one keeps it); `isolation`:
 *   false for a layer turns it off (a user and a network of the student's own are used where the machine allows);
 *   `labCopy`: the copy of the lab the student's user reads as root (grader/student/lab-copy.js; a class shares one;
 *   by default the run's own, removed when it ends); `sources`: the bytes of the submission's modules its digest kept
 *   (grader/student/digest.js submissionDigest; by default the file's own, read here); `dataDir`: the lab's (test-data/grade/lab/); `contentType`: the media type the encodings are probed
 *   and bombed in (grader/checks/encodings.js; found when not given); `onProgress` gets { type, done, total, area, check, note }
 * @returns {Promise<import('./run-checks.js').Card>}
 */
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
  // the digest before the module is loaded: the bytes graded, whatever happens to the file during the run
  // (null for a file that cannot be read: the load fails and says why); its modules' bytes are all
  // the grader reads of a line its process names
  const unreadable = function unreadable () { return null }
  const read = options.sources === undefined ? await submissionDigest(file).catch(unreadable) : null
  const digest = read !== null ? read.sha256 : options.sources === undefined ? null : await fileDigest(file).catch(unreadable)
  const lab = new GradeLab({
    handler: file,
    port: options.port ?? 0,
    host,
    dataDir: labDir,
    budget: settings.memoryBudget,
    isolation: options.isolation,
    labCopy,
    sources: options.sources ?? read?.sources ?? new Map(),
    onCancel: run.cancel
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
