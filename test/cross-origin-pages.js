/**
 * The attacker's side of the cross-origin specs (test/slow/cross-origin.test.js):
 * a web server on another port whose page tries every write against the lab,
 * the script a DNS-rebinding origin runs, and what the test process watches
 * the lab answer and its event bus say.
 */
/* global window, document -- the attacker's scripts run in the page */
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import zlib from 'node:zlib'
import { once } from 'node:events'

/** A small valid /good body, the one write the pages are allowed to try for real. */
export const GZ = zlib.gzipSync('{"items":[{"id":1,"name":"a"}]}')

/**
 * The attacker's own web server, on another port of this machine: its page
 * runs attackFromAnotherOrigin against the lab, by address and by localhost.
 * @param {number} labPort
 */
export async function startAttackerSite (labPort) {
  const server = http.createServer(function serveAttackerPage (req, res) {
    if (req.url !== '/') {
      res.writeHead(404).end()
      return
    }
    const labs = [`http://127.0.0.1:${labPort}`, `http://localhost:${labPort}`]
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
    res.end(scriptPage(attackFromAnotherOrigin, { labs, good: [...GZ] }))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address()
  return {
    port,
    url: `http://localhost:${port}`,
    close: function closeAttackerSite () {
      server.closeAllConnections()
      return new Promise(function closed (resolve) { server.close(function () { resolve() }) })
    }
  }
}

/** An HTML page whose one inline script calls `fn(config)`. */
function scriptPage (fn, config) {
  return `<!doctype html><meta charset="utf-8"><title>loading</title><body>` +
    `<script>(${fn.toString()})(${JSON.stringify(config)})</script></body>`
}

/** A request the lab saw on a path as its route declares it (not another case, slash or escape of it). */
export function isDeclaredSpelling (r) {
  return !/^\/(Generate|GENERATE|generate\/|Generate\/|gen%65rate|DB\/BATCH)(\?|$)/.test(r.path)
}

/**
 * Runs in the attacker's page on http://localhost:OTHER/: every write the
 * lab took from another page before its guard, to each lab URL. Each
 * attempt resolves to a line saying how it ended in the page; when all have
 * settled, `window.attempts` holds them and the title is 'done'.
 */
function attackFromAnotherOrigin ({ labs, good }) {
  const body = new Uint8Array(256 * 1024).fill(0x61)
  const gzip = new Uint8Array(good)
  const attempts = []
  let frames = 0

  function tried (label, request) {
    attempts.push(request.then(function answered (res) { return `${label}: ${res.type} ${res.status}` },
      function failed (err) { return `${label}: failed (${err.message})` }))
  }
  /** An image load: a GET the page cannot read, with whatever query the page likes. */
  function image (url) {
    attempts.push(new Promise(function loadImage (resolve) {
      const img = document.createElement('img')
      img.addEventListener('load', function loaded () { resolve(`img ${url}: loaded`) })
      img.addEventListener('error', function errored () { resolve(`img ${url}: error`) })
      img.src = url
      document.body.append(img)
    }))
  }
  /** A page loaded into a frame: a cross-site navigation (Sec-Fetch-Dest: iframe) the page cannot read. */
  function frame (url) {
    attempts.push(new Promise(function loadFrame (resolve) {
      const shown = document.createElement('iframe')
      shown.addEventListener('load', function loaded () { resolve(`iframe ${url}: loaded`) }, { once: true })
      shown.src = url
      document.body.append(shown)
    }))
  }
  /** A text/plain form posted into a hidden frame: a cross-site POST with no preflight. */
  function form (url) {
    attempts.push(new Promise(function postForm (resolve) {
      const name = `sink-${frames++}`
      const frame = document.createElement('iframe')
      frame.name = name
      document.body.append(frame)
      // added after the frame's own about:blank load: this is the form's answer arriving
      frame.addEventListener('load', function answered () { resolve(`form ${url}: frame loaded`) }, { once: true })
      const f = document.createElement('form')
      f.method = 'POST'
      f.enctype = 'text/plain'
      f.action = url
      f.target = name
      const input = document.createElement('input')
      input.name = 'reset'
      input.value = 'now'
      f.append(input)
      document.body.append(f)
      f.submit()
    }))
  }

  for (const lab of labs) {
    tried(`POST ${lab}/upload-stream`, fetch(`${lab}/upload-stream`, { method: 'POST', mode: 'no-cors', body }))
    tried(`POST ${lab}/upload-buffer`, fetch(`${lab}/upload-buffer`, { method: 'POST', mode: 'no-cors', body }))
    tried(`POST ${lab}/metrics/peak/reset`, fetch(`${lab}/metrics/peak/reset`, { method: 'POST', mode: 'no-cors' }))
    tried(`POST ${lab}/experiments`, fetch(`${lab}/experiments`, {
      method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ name: 'ingest' })
    }))
    tried(`POST ${lab}/good`, fetch(`${lab}/good`, { method: 'POST', mode: 'no-cors', body: gzip }))
    tried(`POST ${lab}/bad`, fetch(`${lab}/bad`, { method: 'POST', mode: 'no-cors', body: gzip }))
    // no-cors allows no DELETE: a cors request, so Chromium asks the lab first (a preflight)
    tried(`DELETE ${lab}/uploads`, fetch(`${lab}/uploads`, { method: 'DELETE' }))
    tried(`GET ${lab}/generate (fetch)`, fetch(`${lab}/generate?save=1&bytes=1MB&level=0`, { mode: 'no-cors' }))
    image(`${lab}/generate?save=1&bytes=50MB&level=0`)
    // every spelling Express would once have routed to /generate: the router is strict and case sensitive
    for (const spelling of ['generate', 'Generate', 'GENERATE', 'generate/', 'Generate/', 'gen%65rate']) {
      frame(`${lab}/${spelling}?save=1&bytes=1MB&level=0`)
    }
    frame(`${lab}/DB/BATCH?limit=1`)
    form(`${lab}/metrics/peak/reset`)
  }
  Promise.allSettled(attempts).then(function finished (outcomes) {
    window.attempts = outcomes.map(function line (o) { return o.status === 'fulfilled' ? o.value : String(o.reason) })
    document.title = 'done'
  })
}

/**
 * Runs in a document of the origin http://attacker.test:LAB, where the
 * rebinding name points at 127.0.0.1: same-origin with the lab's socket, it
 * can read whatever it is answered. It asks for the lab's state, then
 * starts an experiment, posts a body, resets the peak and saves a file, and
 * resolves to each request's status and error type.
 */
export function readThroughRebinding ({ reads, good }) {
  const requests = [
    ...reads.map(function read (p) { return { method: 'GET', path: p, init: { headers: { accept: 'application/json' } } } }),
    { method: 'POST', path: '/experiments', init: { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ingest' }) } },
    { method: 'POST', path: '/good', init: { headers: { 'content-type': 'application/gzip' }, body: new Uint8Array(good) } },
    { method: 'POST', path: '/metrics/peak/reset', init: {} },
    { method: 'GET', path: '/generate?save=1&bytes=50MB&level=0', init: {} }
  ]
  return Promise.allSettled(requests.map(async function ask ({ method, path, init }) {
    const res = await fetch(path, { method, ...init })
    const text = await res.text()
    let type = null
    try { type = JSON.parse(text).error?.type ?? null } catch { /* not an error */ }
    return { method, path, status: res.status, type, text: text.slice(0, 300) }
  })).then(function answers (outcomes) {
    return outcomes.map(function answer (o, i) {
      const { method, path } = requests[i]
      return o.status === 'fulfilled' ? o.value : { method, path, status: 0, type: null, text: String(o.reason) }
    })
  })
}

/**
 * Every request the lab's server answers, as the lab saw it: who the
 * browser said sent it (Host, Sec-Fetch-Site, Origin), the status, and the
 * error's type. It listens before the app, so it sees even the requests the
 * guard refuses before any route.
 * @param {http.Server} server
 */
export function watchRequests (server) {
  const seen = []
  function noteRequest (req, res) {
    const entry = {
      method: req.method,
      path: req.url,
      host: req.headers.host ?? null,
      site: req.headers['sec-fetch-site'] ?? null,
      origin: req.headers.origin ?? null,
      status: null,
      type: null
    }
    seen.push(entry)
    const end = res.end
    res.end = function endAndNote (chunk, ...rest) {
      entry.status = res.statusCode
      if (res.statusCode >= 400 && chunk) {
        try { entry.type = JSON.parse(String(chunk)).error?.type ?? null } catch { /* not the lab's JSON */ }
      }
      return end.call(this, chunk, ...rest)
    }
  }
  server.prependListener('request', noteRequest)
  return {
    seen,
    stop: function stopWatching () { server.off('request', noteRequest) }
  }
}

/**
 * What the lab's event bus says happened: ingest and upload requests that
 * began, experiment events, and peak resets (POST /metrics/peak/reset emits
 * 'peak' with reset: true).
 * @param {import('node:events').EventEmitter} events
 */
export function countEvents (events) {
  const counts = { request: 0, experiment: 0, peakReset: 0 }
  function onRequest () { counts.request++ }
  function onExperiment () { counts.experiment++ }
  function onPeak (peak) { if (peak.reset) counts.peakReset++ }
  events.on('request', onRequest)
  events.on('experiment', onExperiment)
  events.on('peak', onPeak)
  return {
    counts,
    reset: function resetCounts () { for (const key of Object.keys(counts)) counts[key] = 0 },
    stop: function stopCounting () {
      events.off('request', onRequest)
      events.off('experiment', onExperiment)
      events.off('peak', onPeak)
    }
  }
}

/** Every file and folder under `dir`, with each file's size, sorted. */
export function listFiles (dir) {
  return fs.readdirSync(dir, { recursive: true }).map(function describeEntry (name) {
    const stat = fs.statSync(path.join(dir, name))
    return stat.isDirectory() ? `${name}/` : `${name} ${stat.size}`
  }).sort()
}

/** Whether a request is anything but the browser's own ask for /favicon.ico. */
export function notFavicon (request) {
  return request.path !== '/favicon.ico'
}

/** The host name a request named, without its port. */
export function hostOf (request) {
  return String(request.host).replace(/:\d+$/, '')
}
