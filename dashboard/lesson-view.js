/** `/?lesson=<name>`: the page as one lesson's view for a projector (README.md). */
import { make } from './dom.js'
import { findLesson, LESSONS, PANELS } from './lessons.js'

/** Apply `?lesson=` to the page. `name`: the query's `lesson`. `el`: the header's lesson bar. Returns: the view, null on the full page. */
export function applyLesson (name, el) {
  const found = findLesson(name)
  if (found === null) return null
  const root = document.documentElement
  if (found.unknown) {
    const links = Object.keys(LESSONS).map(function lessonLink (known) { return make('a', { href: `/?lesson=${known}` }, known) })
    const list = links.flatMap(function separated (link, i) { return i === 0 ? [link] : [', ', link] })
    el.bar.replaceChildren(make('p', { class: 'lesson-unknown', role: 'alert' },
      `There is no lesson "${found.name}": this is the full page. The lessons with a view: `, ...list, '.'))
    el.bar.hidden = false
    return null
  }
  const { lesson } = found
  root.dataset.lesson = found.name
  for (const panel of PANELS) root.classList.toggle(`show-${panel}`, lesson.panels.includes(panel))
  document.title = `${lesson.title}: streamlab lesson`
  el.bar.replaceChildren(
    make('p', { class: 'lesson-question' }, make('span', { class: 'lesson-title' }, `${lesson.title}. `), lesson.question),
    make('a', { class: 'lesson-full', href: '/' }, 'Full page'))
  el.bar.hidden = false
  return { name: found.name, experiment: lesson.experiment, panels: lesson.panels }
}
