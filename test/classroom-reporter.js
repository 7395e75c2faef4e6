/**
 * GitHub Classroom's autograding reporter as the classroom specs read a grading's results: the
 * step outputs GitHub Actions takes from $GITHUB_OUTPUT, each runner's `<RUNNER>_RESULTS`
 * decoded as its src/main.js decodes it, and the points totalled as its src/notify-classroom.js
 * totals them (docs/sources.md, "GitHub Classroom"). Written here from what those files do.
 */

/**
 * A step's outputs from the file GitHub Actions names in GITHUB_OUTPUT: `name=value` lines, the
 * last value of a name standing. (The `name<<DELIMITER` form is refused: --classroom writes one line.)
 * @param {string} text
 * @returns {Record<string, string>}
 */
export function readStepOutputs (text) {
  const outputs = {}
  for (const line of text.split('\n')) {
    if (line === '') continue
    const eq = line.indexOf('=')
    if (eq <= 0 || line.includes('<<')) throw new SyntaxError(`not a name=value output line: ${line.slice(0, 60)}`)
    outputs[line.slice(0, eq)] = line.slice(eq + 1)
  }
  return outputs
}

/**
 * The reporter's reading of its inputs: each of the comma-separated `runners`, trimmed and
 * upper-cased, names the environment variable `<RUNNER>_RESULTS`, base64 of the results' JSON.
 * @param {string} runners the step's `runners:` input
 * @param {NodeJS.ProcessEnv} env
 * @returns {Array<{ runner: string, results: object }>}
 */
export function parseRunnerResults (runners, env) {
  return runners.split(',').map(function decoded (runner) {
    const encoded = env[`${runner.trim().toUpperCase()}_RESULTS`]
    const json = Buffer.from(encoded, 'base64').toString('utf-8')
    return { runner, results: JSON.parse(json) }
  })
}

/**
 * What the reporter posts to GitHub Classroom: a runner counts when its `max_score` is set (not 0),
 * adding its `max_score` to the points possible and each of its tests' `score` to the points won;
 * nothing is posted when no points are possible. It fails the step when a runner's `status` is
 * 'fail' or 'error'.
 * @returns {{ totalPoints: number, maxPoints: number, text: string|null, failed: boolean }}
 */
export function classroomTotals (runnerResults) {
  let totalPoints = 0
  let maxPoints = 0
  for (const { results } of runnerResults) {
    if (!results.max_score) continue
    maxPoints += results.max_score
    for (const { score } of results.tests) totalPoints += score
  }
  const failed = runnerResults.some(function failing ({ results }) { return results.status === 'fail' || results.status === 'error' })
  return { totalPoints, maxPoints, text: maxPoints ? `Points ${totalPoints}/${maxPoints}` : null, failed }
}

/**
 * The reporter's step in a workflow, read from its text: the step ids it reads (`runners:`) and
 * the environment it sets them from (`<ID>_RESULTS: "${{ steps.<id>.outputs.result }}"`).
 * @param {string} yaml
 * @returns {{ uses: string, runners: string, env: Record<string, string> }} env: variable -> the step id it reads
 */
export function reporterStep (yaml) {
  const uses = /uses:\s*(\S*autograding-grading-reporter@\S+)/.exec(yaml)
  const runners = /^\s*runners:\s*(\S+)\s*$/m.exec(yaml)
  if (uses === null || runners === null) throw new Error('no autograding-grading-reporter step with runners:')
  const env = {}
  const results = /^\s*([A-Za-z0-9_-]+_RESULTS):\s*"\$\{\{\s*steps\.([A-Za-z0-9_-]+)\.outputs\.result\s*\}\}"\s*$/gm
  for (const m of yaml.matchAll(results)) env[m[1]] = m[2]
  return { uses: uses[1], runners: runners[1], env }
}
