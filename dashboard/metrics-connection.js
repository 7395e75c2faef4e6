/** The page's one connection to GET /metrics and the state it shows (README.md). */

const EVENT_TYPES = Object.freeze(['sample', 'request', 'experiment', 'peak', 'crash', 'run-record', 'sites', 'dropped', 'gap'])

const RESTART_AFTER_MS = 3000

export function connectMetrics ({ url, onState, onEvent }) {
  let source = null
  let state = 'connecting'
  let since = Date.now()
  let reconnects = 0
  let everLive = false
  let restartTimer = null

  function setState (next) {
    if (next === state) return
    state = next
    since = Date.now()
    onState(state, { since, reconnects })
  }

  function onOpen () {
    if (everLive) reconnects++
    everLive = true
    setState('live')
  }

  function onError () {
    if (source.readyState === EventSource.CLOSED) {
      // the browser gave up: try again ourselves, once per interval
      source.close()
      restartTimer = setTimeout(function restartSource () {
        restartTimer = null
        open()
      }, RESTART_AFTER_MS)
    }
    setState(everLive ? 'reconnecting' : 'connecting')
  }

  function onMessage (event) {
    let data
    try {
      data = JSON.parse(event.data)
    } catch {
      return
    }
    onEvent(event.type, data)
  }

  function open () {
    source = new EventSource(url)
    source.addEventListener('open', onOpen)
    source.addEventListener('error', onError)
    for (const type of EVENT_TYPES) source.addEventListener(type, onMessage)
  }

  open()
  onState(state, { since, reconnects })

  return {
    get state () { return state },
    close: function closeConnection () {
      if (restartTimer !== null) clearTimeout(restartTimer)
      restartTimer = null
      source.close()
    }
  }
}
