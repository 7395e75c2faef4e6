/** What a process the grader started printed: its last part, the line that says why it failed, its last words. */
import { finished } from 'node:stream/promises'

/** Past this many characters the start of the output is dropped. */
const OUTPUT_MAX = 1_000_000
const OUTPUT_KEPT = 500_000

/** `output` with `chunk` added: a process that logs without end must not make the grader's memory its own. */
export function keepTail (output, chunk) {
  const kept = output + chunk
  return kept.length > OUTPUT_MAX ? kept.slice(-OUTPUT_KEPT) : kept
}

/** The last "TypeError: …" line with its first frame outside Node and packages (the handler's line); else the last line. */
export function crashLine (output) {
  const lines = output.slice(-20_000).split('\n').map(function trim (line) { return line.trim() }).filter(Boolean)
  for (let k = lines.length - 1; k >= 0; k--) {
    if (!/^(Uncaught )?([A-Z]\w*)?(Error|Exception)\b/.test(lines[k])) continue
    const frame = lines.slice(k + 1).find(function ownFrame (line) {
      return line.startsWith('at ') && !/node_modules|node:|\(internal\//.test(line)
    })
    const where = frame ? ` (${frame.replace(/^at /, '').replace(/^.*\((.*)\)$/, '$1').replace(/^file:\/\//, '').slice(-120)})` : ''
    return (lines[k] + where).slice(0, 300)
  }
  return lines.length > 0 ? lines[lines.length - 1].slice(0, 300) : 'no output'
}

/** How long a process's pipes may stay open after its exit before it is judged without the rest. */
const DRAIN_MS = 1000

/** Resolves once stdout and stderr have ended, or after `ms`: 'exit' can beat a crash's last stack lines, which tell the death. */
export function outputDrained (child, ms = DRAIN_MS) {
  const pipes = [child.stdout, child.stderr].filter(Boolean).map(function ended (stream) {
    return finished(stream).catch(function ignore () {})
  })
  let timer
  const late = new Promise(function wait (resolve) { timer = setTimeout(resolve, ms) })
  return Promise.race([Promise.all(pipes), late]).finally(function clear () { clearTimeout(timer) })
}
