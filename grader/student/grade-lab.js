/**
 * The pair a handler's grading runs on: the student's process, which serves
 * /student, beside the reference lab, which serves the lab's routes and the
 * dashboard. A death, a hang or a restart is the student's process's; fresh
 * processes for memory figures come from freshProcesses().
 */
import { FreshLabs } from '../lab/fresh-labs.js'
import { ReferenceLab } from '../lab/reference-lab.js'
import { StudentProcess, StudentProcesses } from './student-process.js'

/** A grading's two processes: the reference lab (the dashboard's, on `port`) and the student's process (on a port the grader opens). */
export class GradeLab {
  #options

  /**
   * @param {{ handler: string, port?: number, host?: string, dataDir?: string, budget: number,
   *   onCancel?: (id: string) => void, isolation?: { user?: boolean, network?: boolean }, labCopy?: import('./lab-copy.js').LabCopy,
   *   sources?: Map<string, Buffer> }} options
   *   `budget`: RSS in bytes past which either process is killed; `isolation`: layers to turn off; `labCopy`: the
   *   run's copy of the lab its student processes read as root (lab-copy.js), the caller's to remove; `sources`:
   *   the bytes of the submission's modules its digest kept, where a sampled process's sites find their code
   */
  constructor (options) {
    this.#options = { port: 0, host: '127.0.0.1', ...options }
    /** Every student process of the grading, this one's and the fresh ones'. */
    this.students = new StudentProcesses()
    this.reference = new ReferenceLab({ port: this.#options.port, host: this.#options.host, dataDir: this.#options.dataDir, budget: this.#options.budget, onCancel: this.#options.onCancel })
    const { handler, host, budget, isolation, labCopy } = this.#options
    this.student = new StudentProcess({ handler, host, budget, students: this.students, isolation, labCopy })
  }

  /** How many times the student's process died since the first start. */
  get deaths () { return this.student.deaths }
  get lastDeath () { return this.student.lastDeath }
  get alive () { return this.student.alive && this.reference.alive }
  /** The reference lab's URL: its dashboard follows the run. */
  get url () { return this.reference.url }
  get kind () { return this.student.kind }
  get pid () { return this.student.pid }
  /** How the student's process is isolated (isolation.js). */
  get isolation () { return this.student.isolation }

  /** The student's process's output: where a handler's errors are. */
  output () {
    return this.student.output()
  }

  /**
   * Where a route is served: /student by the student's process, the others by the reference lab.
   * @param {string} route
   */
  urlOf (route) {
    return route === 'student' ? this.student.urlOf(route) : `${this.reference.url}/${route}`
  }

  /**
   * Start both; when either fails, stop the other.
   * @throws {Error} `code` 'LOAD_FAILED' when the module did not load (the message says why)
   */
  async start () {
    const [reference, student] = await Promise.allSettled([this.reference.start(), this.student.start()])
    if (reference.status === 'fulfilled' && student.status === 'fulfilled') return
    await this.stop()
    throw student.status === 'rejected' ? student.reason : reference.reason
  }

  /** Start the student's process again (it died or hung), and the reference lab if it died. */
  async restart () {
    await this.student.restart()
    if (!this.reference.alive) await this.reference.restart()
  }

  /** Stop both, and every student process of the grading: resolves once none of them runs. */
  async stop () {
    await Promise.all([this.student.stop(), this.reference.stop()])
    await this.students.stopAll()
  }

  settle (timeoutMs) {
    return this.student.settle(timeoutMs)
  }

  stats () {
    return this.student.stats()
  }

  cpuMs () {
    return this.student.cpuMs()
  }

  measure (load) {
    return this.student.measure(load)
  }

  runStep (step) {
    this.reference.runStep(step)
  }

  /**
   * Run `work` (timing a reference route) with every student process of the grading stopped.
   * @template T
   * @param {() => Promise<T>} work
   * @returns {Promise<T>}
   */
  whileStudentsPaused (work) {
    return this.students.pausedWhile(work)
  }

  /**
   * Processes that have served nothing yet, for memory figures: a student's
   * process with the same handler, budget and isolation, on a free port (for
   * the allocation sites, one with the lab's sampler in it), or a reference
   * lab; each joins the grading's set while it runs.
   * @returns {FreshLabs}
   */
  freshProcesses () {
    const { handler, host, dataDir, budget, isolation, labCopy, sources } = this.#options
    const students = this.students
    return new FreshLabs({
      student: function freshStudent () { return new StudentProcess({ handler, host, budget, students, isolation, labCopy }) },
      sampled: function sampledStudent () {
        return new StudentProcess({ handler, host, budget, students, isolation, labCopy, sampled: true, sources })
      },
      reference: function freshReference () { return new ReferenceLab({ port: 0, host, dataDir, budget }) }
    })
  }
}
