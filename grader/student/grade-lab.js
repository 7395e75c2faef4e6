/** A handler's grading pair: the student's process (/student) beside the reference lab; deaths and restarts are the student's. */
import { FreshLabs } from '../lab/fresh-labs.js'
import { ReferenceLab } from '../lab/reference-lab.js'
import { StudentProcess, StudentProcesses } from './student-process.js'

export class GradeLab {
  #options

  /** `budget`: RSS bytes past which either is killed; `labCopy`: the caller's to remove; `sources`: where sites find their code. */
  constructor (options) {
    this.#options = { port: 0, host: '127.0.0.1', ...options }
    this.students = new StudentProcesses()
    const { port, host, dataDir, budget, onCancel, handler, isolation, labCopy } = this.#options
    this.reference = new ReferenceLab({ port, host, dataDir, budget, onCancel })
    this.student = new StudentProcess({ handler, host, budget, students: this.students, isolation, labCopy })
  }

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

  /** Where a route is served: /student by the student's process, the others by the reference lab. */
  urlOf (route) {
    return route === 'student' ? this.student.urlOf(route) : `${this.reference.url}/${route}`
  }

  /** Start both; when either fails, stop the other. Throws `code` 'LOAD_FAILED' when the module did not load. */
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

  /** Run `work` (timing a reference route) with every student process of the grading stopped. */
  whileStudentsPaused (work) {
    return this.students.pausedWhile(work)
  }

  /** Processes that served nothing yet, for memory figures (one sampled for the sites), each joining the grading's set. */
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
