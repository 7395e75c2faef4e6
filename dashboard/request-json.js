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
  if (!res.ok) throw Object.assign(new Error(await answerText(res)), { status: res.status })
  return res.json().catch(function notJson () { return null })
}

/** An error answer in words: "409 experiment.busy: …" from the lab's error body, else the status alone. */
export async function answerText (res) {
  const e = (await res.json().catch(function notJson () { return null }))?.error
  return e ? `${res.status} ${e.type}: ${e.message}` : `${res.status} ${res.statusText}`
}
