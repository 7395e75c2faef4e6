/** The lesson views: each lesson's experiment, question and panels (README.md; test/lesson-views.test.js). */

export const LESSONS = Object.freeze({
  ingest: lesson('ingest', 'Buffered vs streamed gzip ingest',
    'What does each route cost in memory as the body grows, and as more clients upload at once?',
    ['memory', 'held']),
  backpressure: lesson('backpressure', 'Backpressure: a slow consumer',
    "Where do the bytes wait, and what changes when one line stops waiting for 'drain'?",
    ['pipeline']),
  'zip-bomb': lesson('zip-bomb', 'Zip bombs',
    'What does each route do with the bomb, and what does refusing it cost?',
    ['memory']),
  upload: lesson('upload', 'Buffered vs streamed upload to disk',
    'Does keeping the whole body in memory matter with one upload, and with 200 at once?',
    ['memory']),
  'chunk-size': lesson('chunk-size', 'Read chunk size, Buffer vs string',
    'How big should a read be, and what does it cost to pass each chunk on as a string instead of a Buffer?',
    ['memory']),
  'tiny-writes': lesson('tiny-writes', 'Many tiny writes vs coalesced writes',
    'How much faster is it to gather the bytes into blocks first, ' +
      'and can cork() and uncork() do the same without changing the code that writes?',
    ['loop']),
  'db-export': lesson('db-export', 'Database export, batch vs stream',
    'Which is faster in total, which shows the first row sooner, and what does each cost the server in memory?',
    ['memory'])
})

/** Every panel a view may show or hide, by name. */
export const PANELS = Object.freeze(['memory', 'held', 'bytes', 'loop', 'pipeline', 'figures'])

/** The lesson a `?lesson=` value names. Returns: null when none is asked for. */
export function findLesson (name) {
  if (name === null || name === undefined) return null
  if (Object.hasOwn(LESSONS, name)) return { name, lesson: LESSONS[name] }
  return { name: String(name).slice(0, 60), unknown: true }
}

function lesson (experiment, title, question, panels) {
  return Object.freeze({ experiment, title, question, panels: Object.freeze(panels) })
}
