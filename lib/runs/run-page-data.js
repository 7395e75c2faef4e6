/**
 * A run record inside an exported page (lib/runs/run-page.js): JSON in a script element of type application/json, which no
 * browser runs, with every `<` written `\u003c`, so no string of the record can end the element or open a tag, whatever it holds.
 * The CLI's export and the dashboard's Export button fill a page through here; the page reads the record back with the same rules
 * as the lab (lib/runs/check.js).
 */
import { jsonText } from '../util/escape.js'

/** The data element's tags, and what it holds in a page with no run yet (`null`: no record). */
export const RECORD_ELEMENT_ID = 'run-record'
// each tag written in two parts: this module is inlined in the page's script, whose text must hold neither tag
// (lib/runs/run-page.js refuses to inline it otherwise)
const DATA_OPEN = `<${'script'} type="application/json" id="${RECORD_ELEMENT_ID}">`
const DATA_CLOSE = `<${'/script'}>`
const EMPTY = 'null'

/** The data element of a page with no run in it, as a template writes it. */
export function emptyRecordElement () {
  return `${DATA_OPEN}${EMPTY}${DATA_CLOSE}`
}

/**
 * A record as the data element's text: its JSON (jsonText: no raw bidi mark or control character in the page's source) with every
 * `<` escaped (JSON reads `\u003c` back as `<`).
 */
export function recordElementText (record) {
  return jsonText(record).replace(/</g, '\\u003c')
}

/** A run page (`runPageTemplate()`) with a checked record in it; throws when the template has no empty data element. */
export function embedRecord (template, record) {
  const slot = emptyRecordElement()
  const at = template.indexOf(slot)
  if (at === -1) throw new Error('not a run page template: it has no empty record element')
  return `${template.slice(0, at)}${DATA_OPEN}${recordElementText(record)}${DATA_CLOSE}${template.slice(at + slot.length)}`
}

/** The name an exported page is saved under: streamlab-run-<id>.html (an id is letters, digits, - and _). */
export function runPageName (record) {
  return `streamlab-run-${record.id}.html`
}
