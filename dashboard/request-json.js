/** The page's one way to call the lab's API (the control panel, the Runs panel). */

/** Call the lab's API; a non-2xx answer throws an Error with the server's message ("409 experiment.busy: …"). */
export async function requestJson (method, url, body) {
  const init = { method, headers: { accept: 'application/json' } }
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  let res
  try {
    res = await fetch(url, init)
  } catch (err) {
    throw new Error(`The server did not answer (${err.message}).`, { cause: err })
  }
  let json = null
  try {
    json = await res.json()
  } catch {
    // not JSON: the status says enough
  }
  if (!res.ok) {
    const e = json?.error
    const err = new Error(e ? `${res.status} ${e.type}: ${e.message}` : `${res.status} ${res.statusText}`)
    err.status = res.status
    throw err
  }
  return json
}
