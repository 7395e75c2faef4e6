/** The steps of a run by the `stage` its progress names, each with one line saying what happens. */

const STEPS = Object.freeze({
  input: { name: 'Preparing the body', why: 'The body every upload sends is generated (or reused) before anything is measured.' },
  bound: {
    name: 'Measuring this machine\'s bound',
    unit: 'passes',
    why: 'How fast this machine inflates and parses this body at best, one pass a stage: the ceiling each route is compared with.'
  },
  'warm-up': {
    name: 'Warm-up',
    why: 'One small upload per route, not drawn and not counted, so no route pays its first-request costs in the measurement.'
  },
  load: { name: 'Uploads', unit: 'uploads', why: 'The measured uploads: the chart shows the memory, the bars what each upload holds.' },
  upload: { name: 'Uploads', why: 'The measured uploads, one cell of concurrent uploads after another.' },
  bomb: {
    name: 'Sending the bomb',
    why: 'A small compressed body that inflates to far more: each route must stop it before it costs the server.'
  },
  send: { name: 'Sending the bytes', why: 'A client process writes the bytes over TCP to a reader process, one way after another.' },
  database: { name: 'Readying the database', why: 'The rows the export reads are seeded or checked first.' },
  export: { name: 'Exporting the rows', why: 'The rows leave the database in batches or as one stream; each is timed.' },
  done: { name: 'Finishing', why: 'The last figures are read and the results are put together.' },
  wait: { name: 'Waiting', why: 'The lab waits for what the step left to end before it measures.' },
  clean: { name: 'Cleaning up', why: 'What the run opened is closed and counted.' }
})

/** Before the run names its first step. */
const STARTING = Object.freeze({ name: 'Starting', why: 'The lab starts what the run needs (its client and helper processes).' })

/** A run's progress in words: the step's name with how far it is, and what the step does. */
export function describeStep (p) {
  const step = typeof p.stage === 'string' ? STEPS[p.stage] ?? { name: p.stage, why: '' } : STARTING
  // a count in the step's own unit; a step without one counts nothing the reader sees
  const counted = step.unit !== undefined || !Object.hasOwn(STEPS, p.stage ?? '')
  const count = counted && Number.isFinite(p.total) && p.total > 0 ? `${p.done} of ${p.total}${step.unit ? ` ${step.unit}` : ''}` : ''
  const where = [p.route ? `/${p.route}` : '', typeof p.cell === 'string' ? p.cell : '']
  const line = [step.name, count, ...where].filter(function shown (part) { return part !== '' }).join(' · ')
  return { line, why: step.why }
}
