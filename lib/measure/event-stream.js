// A small Server-Sent Events client for scripts and tests: GET /metrics's events as a list, a wait for one,
// and a reconnect with `Last-Event-ID` as EventSource does.
import http from 'node:http'

/** Open an event stream; `ended` settles with the connection's error code (null: a clean end). */
export function openEventStream (url, { lastEventId = null } = {}) {
  const headers = { accept: 'text/event-stream' }
  if (lastEventId !== null && lastEventId !== undefined) headers['last-event-id'] = String(lastEventId)
  return new Promise(function connect (resolve, reject) {
    const req = http.get(url, { headers, agent: false }, function onResponse (res) {
      if (res.statusCode !== 200) {
        res.resume()
        reject(new Error(`GET ${url} answered ${res.statusCode}`))
        return
      }
      const events = []
      const waiters = new Set()
      let pending = ''
      let endedWith
      const ended = new Promise(function waitForEnd (done) { endedWith = done })
      res.setEncoding('utf8')
      res.on('data', function onData (chunk) {
        pending += chunk
        let boundary
        while ((boundary = pending.indexOf('\n\n')) !== -1) {
          const block = pending.slice(0, boundary)
          pending = pending.slice(boundary + 2)
          const event = parseBlock(block)
          if (event === null) continue
          events.push(event)
          for (const waiter of [...waiters]) waiter(event)
        }
      })
      res.on('end', function onEnd () { endedWith(null) })
      res.on('error', function onError (err) { endedWith(err.code ?? err.message) })
      res.on('close', function onClose () { endedWith(null) })
      resolve({
        events,
        ended,
        lastId: function lastId () {
          for (let k = events.length - 1; k >= 0; k--) if (events[k].id !== null) return events[k].id
          return null
        },
        waitFor: function waitFor (test, timeoutMs = 10_000) {
          const seen = events.find(test)
          if (seen) return Promise.resolve(seen)
          return new Promise(function waitForEvent (found, fail) {
            const timer = setTimeout(function giveUp () {
              waiters.delete(check)
              fail(new Error(`no such event within ${timeoutMs} ms; got ${events.map(function name (e) { return e.event }).join(', ')}`))
            }, timeoutMs)
            function check (event) {
              if (!test(event)) return
              clearTimeout(timer)
              waiters.delete(check)
              found(event)
            }
            waiters.add(check)
          })
        },
        close: function close () {
          req.destroy()
        }
      })
    })
    req.on('error', reject)
  })
}

/** One SSE block: `id:`, `event:` and `data:` lines; comments and retry hints give null. */
function parseBlock (block) {
  let id = null
  let event = 'message'
  const data = []
  for (const line of block.split('\n')) {
    if (line.startsWith('id: ')) id = Number(line.slice(4))
    else if (line.startsWith('event: ')) event = line.slice(7)
    else if (line.startsWith('data: ')) data.push(line.slice(6))
  }
  if (data.length === 0) return null
  let parsed = data.join('\n')
  try {
    parsed = JSON.parse(parsed)
  } catch {
    // not JSON: kept as text
  }
  return { id, event, data: parsed }
}
