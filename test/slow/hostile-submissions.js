/**
 * A class of hostile submissions, made in a temporary folder at test time: each buffers its body
 * (so that its memory check fails and the grader names its sites) and forges allocation sites
 * naming a file it is not: a named pipe, a socket, a link to a teacher's 0600 file in a 0700
 * folder, a 50 MB file, /etc/shadow and another student's handler. Beside them, an honest
 * streaming submission that must still get its row (test/slow/grade-hostile-sites.test.js).
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

export const SECRET = 'TEACHER-SECRET: answer key = 42'

/**
 * A handler that buffers, and adds to the sampler's table (grader/student/sites-writer.js writes
 * it with fs.writeFileSync) a site in each of `names`, resolved from its own folder, that
 * "allocated" more every write.
 * @param {string[]} names
 */
export function forgingHandler (names) {
  return `import fs from 'node:fs'
import zlib from 'node:zlib'

const FORGED = ${JSON.stringify(names)}.map(function fromHere (name) {
  return name.startsWith('/') ? name : new URL(name, import.meta.url).pathname
})
const started = Date.now()
const write = fs.writeFileSync
fs.writeFileSync = function forgeSites (file, data, ...rest) {
  if (String(file).includes('allocation-sites') && typeof data === 'string') {
    const doc = JSON.parse(data)
    const bytes = (Date.now() - started + 1000) * 1e6
    for (const file of FORGED) {
      doc.sites.push({ kind: 'buffer', file, line: 1, column: 1, functionName: 'forged', allocatedBytes: bytes, heldBytes: null, samples: 1 })
    }
    data = JSON.stringify(doc)
  }
  return write.call(this, file, data, ...rest)
}

export default function buffers (req, res) {
  const chunks = []
  const inflated = req.pipe(zlib.createGunzip())
  inflated.on('data', function keepChunk (chunk) { chunks.push(chunk) })
  inflated.on('error', function refuse (err) { res.status(400).json({ error: err.message }) })
  inflated.on('end', function answerAll () {
    const doc = JSON.parse(Buffer.concat(chunks).toString('latin1'))
    let idSum = 0n
    for (const record of doc.items) if (Number.isSafeInteger(record?.id)) idSum += BigInt(record.id)
    res.json({ items: doc.items.length, idSum: idSum.toString() })
  })
}
`
}

/** A folder submission: package.json naming index.mjs, which forges sites at `names`. */
function folderSubmission (dir, names) {
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ main: 'index.mjs' }))
  fs.writeFileSync(path.join(dir, 'index.mjs'), forgingHandler(names))
}

/**
 * Make the class in a fresh temporary folder.
 * @param {{ kinds?: string[], single?: boolean }} [options] which hostile submissions to make (all by default);
 *   `single`: also `single/handler.mjs` beside a pipe, a socket and a link it names, outside the class
 * @returns {Promise<{ root: string, classDir: string, single: string, secretFile: string, close: () => Promise<void> }>}
 *   `close` stops the socket's server and removes everything
 */
export async function hostileClass ({ kinds = ['fifo', 'socket', 'leak', 'huge', 'names'], single = false } = {}) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-hostile-'))
  fs.chmodSync(root, 0o755)
  const classDir = path.join(root, 'class')
  fs.mkdirSync(classDir)
  // the teacher's secret: a 0600 file in a 0700 folder, outside the class
  const vault = path.join(root, 'vault')
  fs.mkdirSync(vault, { mode: 0o700 })
  const secretFile = path.join(vault, 'answers.txt')
  fs.writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 })
  const servers = []
  if (kinds.includes('fifo')) {
    folderSubmission(path.join(classDir, 'fifo'), ['pipe.js'])
    execFileSync('mkfifo', [path.join(classDir, 'fifo', 'pipe.js')])
  }
  if (kinds.includes('socket')) {
    folderSubmission(path.join(classDir, 'socket'), ['socket.js'])
    const server = net.createServer()
    await new Promise(function listening (resolve) { server.listen(path.join(classDir, 'socket', 'socket.js'), resolve) })
    servers.push(server)
  }
  if (kinds.includes('leak')) {
    folderSubmission(path.join(classDir, 'leak'), ['leak.js'])
    // a handler its user cannot read: it runs from a copy, which leaves the link out
    fs.chmodSync(path.join(classDir, 'leak', 'index.mjs'), 0o600)
    fs.symlinkSync(secretFile, path.join(classDir, 'leak', 'leak.js'))
  }
  if (kinds.includes('huge')) {
    // a 50 MB file beside the handler, named by a forged site (more than a submission's file may be)
    folderSubmission(path.join(classDir, 'huge'), ['big.js'])
    fs.writeFileSync(path.join(classDir, 'huge', 'big.js'), Buffer.alloc(50e6, 0x2f))
  }
  if (kinds.includes('names')) {
    folderSubmission(path.join(classDir, 'names'), ['/etc/shadow', '../honest/index.mjs', 'index.mjs'])
  }
  if (single) {
    // the single-file form: its scope is the handler's folder, where all three lie beside it
    const dir = path.join(root, 'single')
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, 'handler.mjs'), forgingHandler(['pipe.js', 'socket.js', 'leak.js']), { mode: 0o600 })
    execFileSync('mkfifo', [path.join(dir, 'pipe.js')])
    const server = net.createServer()
    await new Promise(function listening (resolve) { server.listen(path.join(dir, 'socket.js'), resolve) })
    servers.push(server)
    fs.symlinkSync(secretFile, path.join(dir, 'leak.js'))
  }
  fs.mkdirSync(path.join(classDir, 'honest'))
  fs.copyFileSync('exercises/01-stream/solution-stream.js', path.join(classDir, 'honest', 'index.mjs'))
  return {
    root,
    classDir,
    single: path.join(root, 'single', 'handler.mjs'),
    secretFile,
    close: async function close () {
      await Promise.all(servers.map(function stop (server) { return new Promise(function closed (resolve) { server.close(resolve) }) }))
      fs.rmSync(root, { recursive: true, force: true })
    }
  }
}
