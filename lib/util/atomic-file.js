/**
 * Write a file so that readers see either the old file or the whole new one, never a half-written one: stream into a unique temp
 * file in the same directory, then rename.
 */
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { PROJECT_ROOT } from './project-root.js'

/**
 * Stream `sourceStreams` into `dir/name` atomically. The directory is created if missing; on any failure (including `signal`
 * aborting) the temp file is removed and the target is left as it was. `name` has no directory part; `sourceStreams` are a
 * readable, or a readable followed by transforms, as for `pipeline`. Resolves to `{ path, bytes }`, the path absolute.
 */
export async function writeAtomically (dir, name, sourceStreams, { signal } = {}) {
  if (typeof name !== 'string' || name === '' || name === '.' || name === '..' || path.basename(name) !== name) {
    throw new TypeError(`file name must be a plain name without a directory, got ${name}`)
  }
  const streams = Array.isArray(sourceStreams) ? sourceStreams : [sourceStreams]
  const target = path.resolve(dir, name)
  await fs.promises.mkdir(path.dirname(target), { recursive: true })
  // Same directory as the target, so the rename never crosses a filesystem.
  const temp = path.join(path.dirname(target), `.${name}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
  const file = fs.createWriteStream(temp, { flags: 'wx' })
  try {
    await pipeline(...streams, file, { signal })
    await fs.promises.rename(temp, target)
  } catch (err) {
    // Wait for the descriptor to close, or a late open could recreate the temp file after rm.
    file.destroy()
    await closed(file)
    await fs.promises.rm(temp, { force: true })
    throw err
  }
  return { path: target, bytes: file.bytesWritten }
}

/** A path as shown to people: relative to the project root when inside it, else absolute. */
export function displayPath (file) {
  const absolute = path.resolve(file)
  const relative = path.relative(PROJECT_ROOT, absolute)
  const outside = relative === '' || relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)
  return outside ? absolute : relative
}

function closed (stream) {
  return new Promise(function waitForClose (resolve) {
    if (stream.closed) resolve()
    else stream.once('close', resolve)
  })
}
