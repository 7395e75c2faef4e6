// One POST of a body streamed from `streams`, the answer read whole. The lab may refuse and close before the
// body is sent: the answer says why, so that is no error; a request that gets no answer is.
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { pipeline } from 'node:stream/promises'

/** `ms`: from the first byte sent to the answer's end. */
export function postBody (url, streams, headers) {
  return new Promise(function send (resolve, reject) {
    const started = performance.now()
    const req = http.request(url, { method: 'POST', agent: false, headers }, function answered (res) {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', function keep (chunk) { text += chunk })
      res.on('end', function done () { resolve({ status: res.statusCode, text, ms: performance.now() - started }) })
      res.on('error', reject)
    })
    req.on('error', reject)
    pipeline(...streams, req).catch(function senderStopped () {
      // refused before the whole body was sent, or the request failed: its own events say which
    })
  })
}
