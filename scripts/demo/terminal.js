/** The demo's terminal: lines, colour and a live progress line at a terminal (thinned out in a log), and the pauses. */
import readline from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'

export function createTerminal ({ stdout, stdin, pause }) {
  const tty = stdout.isTTY === true
  const colour = tty && !process.env.NO_COLOR
  let progressShown = false
  let lastLine = ''
  let lastLineAt = 0

  function style (code, text) {
    return colour ? `\x1b[${code}m${text}\x1b[0m` : text
  }
  function clearProgress () {
    if (progressShown) stdout.write('\r\x1b[2K')
    progressShown = false
  }
  function say (line = '') {
    clearProgress()
    stdout.write(line + '\n')
  }
  return {
    say,
    bold: function bold (text) { return style('1', text) },
    good: function good (text) { return style('1;32', text) },
    warn: function warn (text) { return style('1;31', text) },
    clearProgress,
    // in a log, a line when the step changes or every few seconds, so a file does not fill with them
    progress: function progress (text, extra = '') {
      if (tty) {
        stdout.write(`\r\x1b[2K  ${style('2', `… ${text}${extra}`)}`)
        progressShown = true
        return
      }
      const now = Date.now()
      if (text === lastLine || now - lastLineAt < 2000) return
      lastLine = text
      lastLineAt = now
      stdout.write(`  … ${text}${extra}\n`)
    },
    /** Wait for the teacher: Enter (q quits), a number of seconds, or not at all; 'go', 'quit' or 'interrupt'. */
    pause: async function pauseForClass (next, signal) {
      clearProgress()
      if (pause.mode === 'none') return 'go'
      if (pause.mode === 'timed') {
        stdout.write(style('2', `  (next: ${next}, in ${pause.seconds} s)`) + '\n')
        await sleep(pause.seconds * 1000, undefined, { signal })
        return 'go'
      }
      // readline puts the terminal in raw mode: Ctrl-C arrives as its 'SIGINT' event, not as a signal
      const rl = readline.createInterface({ input: stdin, output: stdout })
      let onAbort = null
      try {
        return await new Promise(function askTeacher (resolve) {
          onAbort = function aborted () { resolve('interrupt') }
          signal.addEventListener('abort', onAbort, { once: true })
          rl.once('SIGINT', function interrupted () { resolve('interrupt') })
          rl.once('close', function endOfInput () { resolve('quit') })
          rl.question(style('1', `Press Enter to ${next} `) + style('2', '(q to quit) '), function answered (answer) {
            resolve(/^\s*q/i.test(answer) ? 'quit' : 'go')
          })
        })
      } finally {
        signal.removeEventListener('abort', onAbort)
        rl.close()
      }
    }
  }
}
