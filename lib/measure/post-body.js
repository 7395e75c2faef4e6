/**
 * One POST of a body streamed from `streams` (a file, generated gzip, a
 * bomb), and the answer read whole: what the measuring tools send a lab's
 * route (scripts/stages.js, scripts/metrics-cpu.js). The lab may refuse and
 * close before the body is sent: the answer says why, so a sender that stops
 * early is not an error; a request that gets no answer is.
 */
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { pipeline } from 'node:stream/promises'

/**
 * @param {string} url the route's URL
 * @param {import('node:stream').Readable[]} streams piped in order into the request
 * @returns {Promise<{ status: number, text: string, ms: number }>} `ms`: from the first byte sent to the answer's end
 */
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
