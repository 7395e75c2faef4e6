/** The db-export lesson's note when the lab cannot reach its database (README.md). */
import { make } from './dom.js'
import { requestJson } from './request-json.js'

/** `before`: the element the note goes before. Returns: `check` reads /db/status and shows or hides the note. */
export function createDatabaseNote (before) {
  const node = make('p', { id: 'lesson-database', class: 'lesson-database', role: 'alert' })
  node.hidden = true
  before.before(node)

  async function check () {
    let status
    try {
      status = await requestJson('GET', '/db/status')
    } catch (err) {
      showNote(`The lab did not say how its database is (${err.message}).`)
      return
    }
    if (status?.state !== 'failed' && !status?.error) {
      node.hidden = true
      return
    }
    showNote(unreachable(status))
  }

  function showNote (text) {
    node.textContent = text
    node.hidden = false
  }

  return { check, node }
}

/** What to do when the lab cannot reach its database: the one it names, then the fix for its kind. */
export function unreachable (status) {
  const which = `${status.target ?? 'its database'}${status.error ? ` (${status.error})` : ''}`
  const fix = status.kind === 'postgres'
    ? 'Start that PostgreSQL server and run again, or restart the lab without --database-url and DATABASE_URL to use its embedded database.'
    : 'Restart the lab (npm start); if it fails again, seed it first with the lab stopped: npm run db:seed.'
  return `The lab cannot reach its database, ${which}. ${fix} See docs/db-export.md.`
}
