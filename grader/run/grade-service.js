/**
 * Grade a service where it runs (grader/service/): started by the grader
 * (`command`), watched (`pid`) or reached only over HTTP. Memory is judged
 * only where a pid is known: without one the memory lines say "not judged",
 * and fail, since a check passes only on what was measured. Answers are
 * judged by the contract the service keeps, found before the first check.
 */
import { withSeed } from '../checks/bodies.js'
import { detectContract } from '../checks/contract.js'
import { newSeed, normalizeSeed } from '../checks/settings.js'
import { ServiceLab } from '../service/service-lab.js'
import { classifyUrl, remoteRefusal } from '../service/service-url.js'
import { newCard, runChecks, runSetup } from './run-checks.js'

/**
 * Grade a service: an ingest endpoint at `url`, in any language, with the
 * checks a handler gets.
 * @param {{ url: string, command?: string, pid?: number, headers?: Record<string, string>, allowRemote?: boolean,
 *   preset?: 'full'|'quick', settings?: object, areas?: string[], port?: number, host?: string, inputDir?: string,
 *   dataDir?: string, keepOpenMs?: number, seed?: number, startMs?: number, contentType?: string, onProgress?: (event: object) => void }} options
 *   `headers`: sent with every body (a token, a content type); `allowRemote`: grade a URL that is not loopback;
 *   `contentType`: the media type the encodings are probed and bombed in (found when not given);
 *   `port`, `host`: the reference lab's (its dashboard); the rest as grade()'s
 * @returns {Promise<import('./run-checks.js').Card>} with `service`: { url, mode, command, pid, remote, contract, contractProbe, headers, notes }
 * @throws {TypeError} for a URL that is not http://, a remote one without allowRemote, or both command and pid
 */
export function gradeService (options) {
  const target = classifyUrl(options.url)
  if (!target.ok) throw new TypeError(target.problem)
  if (!target.loopback && options.allowRemote !== true) throw new TypeError(remoteRefusal(target.url))
  if (options.command && options.pid !== undefined && options.pid !== null) throw new TypeError('give --start or --pid, not both: the lab either starts the service or watches one that runs')
  if ((options.command || (options.pid !== undefined && options.pid !== null)) && !target.loopback) {
    throw new TypeError('--start and --pid are for a service on this machine: its URL must be a loopback one')
  }
  const seed = options.seed === undefined || options.seed === null ? newSeed() : normalizeSeed(options.seed)
  return withSeed(seed, function gradeServiceWithSeed () { return serviceRun(target, options, seed) })
}

async function serviceRun (target, options, seed) {
  const { preset, settings, checks, run, labDir, host } = runSetup(options)
  const mode = options.command ? 'started' : options.pid !== undefined && options.pid !== null ? 'watched' : 'unwatched'
  const lab = new ServiceLab({
    mode,
    url: target.url,
    command: options.command,
    pid: options.pid,
    budget: settings.memoryBudget,
    port: options.port ?? 0,
    host,
    dataDir: labDir,
    startMs: options.startMs,
    onCancel: run.cancel
  })
  const headers = { ...options.headers }
  const card = await newCard({ handler: target.url.href, preset, areas: options.areas, settings, seed, digest: null, started: run.started })
  card.service = {
    url: target.url.href,
    mode,
    command: options.command ?? null,
    pid: mode === 'watched' ? options.pid : null,
    remote: !target.loopback,
    contract: null,
    contractProbe: null,
    // the names only: a header's value may be a token
    headers: Object.keys(headers),
    notes: []
  }
  try {
    return await runChecks({
      card,
      lab,
      checks,
      run,
      options: { ...options, headers },
      params: { handler: target.url.href, preset },
      startFailure: 'START_FAILED',
      findContract: async function serviceContract (ctx) {
        const found = await detectContract(function postToService (body) { return ctx.post('student', body) }, seed)
        card.service.contract = found.contract.name
        card.service.contractProbe = found.probe
        return found.contract
      }
    })
  } finally {
    if (mode === 'started') card.service.pid = lab.pid
    card.service.notes.push(...lab.notes())
  }
}
