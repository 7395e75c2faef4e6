/** Listen to several events of one emitter: `handlers` by event name; returns the function that removes every one of them. */
export function listen (emitter, handlers) {
  const entries = Object.entries(handlers)
  for (const [event, handler] of entries) emitter.on(event, handler)
  return function stopListening () {
    for (const [event, handler] of entries) emitter.removeListener(event, handler)
  }
}
