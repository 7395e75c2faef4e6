/** Grade a service where it runs: started, watched by pid, or over HTTP only (memory then "not judged", failed). */
import { withSeed } from '../checks/bodies.js'
import { detectContract } from '../checks/contract.js'
import { newSeed, normalizeSeed } from '../checks/settings.js'
import { ServiceLab } from '../service/service-lab.js'
import { classifyUrl, remoteRefusal } from '../service/service-url.js'
import { newCard, runChecks, runSetup } from './run-checks.js'

/** Grade the endpoint at `url` with a handler's checks; options in grader/run/README.md. TypeError for a bad URL or mode. */
export function gradeService (options) {
  const target = classifyUrl(options.url)
  if (!target.ok) throw new TypeError(target.problem)
  if (!target.loopback && options.allowRemote !== true) throw new TypeError(remoteRefusal(target.url))
  if (options.command && options.pid !== undefined && options.pid !== null) {
    throw new TypeError('give --start or --pid, not both: the lab either starts the service or watches one that runs')
  }
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
    mode, url: target.url, command: options.command, pid: options.pid, budget: settings.memoryBudget,
    port: options.port ?? 0, host, dataDir: labDir, startMs: options.startMs, onCancel: run.cancel
  })
  const headers = { ...options.headers }
  const card = await newCard({ handler: target.url.href, preset, areas: options.areas, settings, seed, digest: null, started: run.started })
  card.service = {
    url: target.url.href, mode, command: options.command ?? null, pid: mode === 'watched' ? options.pid : null,
    remote: !target.loopback, contract: null, contractProbe: null,
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
