/**
 * What the /metrics specs share: a lab whose app they keep (its bus and its
 * sampler) on a port or a unix socket, and a wait on a condition.
 */
import http from 'node:http'
import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import { createApp } from '../app.js'

/** Like helpers' startLab, but keeps the app (its bus and sampler) and can listen on a unix socket. */
export async function startMetricsLab (listenOn = { port: 0, host: '127.0.0.1' }, options) {
  const app = createApp(options)
  const server = http.createServer(app)
  server.listen(listenOn)
  await once(server, 'listening')
  const address = server.address()
  return {
    app,
    server,
    url: typeof address === 'string' ? null : `http://127.0.0.1:${address.port}`,
    close: async function () {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
      await app.close()
    }
  }
}

/** Poll `check()` every 25 ms until it gives a truthy value, and return it; past `ms`, fail naming `what`. */
export async function until (check, ms, what) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const value = await check()
    if (value) return value
    await delay(25)
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`)
}
