/**
 * Documents built to trip a record cutter that reads 64 bytes at a time (lib/json/cutter.js):
 * escapes and brackets inside strings at every position of a word, `"items"` repeated, records
 * longer than its window, CRLF, pretty-printed and minified text, nesting at the limit, and
 * faults between records. Each is `{ name, format, text }`.
 */

/** A record whose string puts `tricky` at `shift` bytes into the document's 64-byte words. */
function shiftedRecord (id, shift, tricky) {
  return `{"id":${id},"pad":"${'p'.repeat(shift)}","s":"${tricky}","n":[${id},{"k":"]}"}]}`
}

/** Escapes and brackets in strings, each at every one of 70 offsets. */
function acrossWords () {
  const tricky = ['\\\\', '\\"', '\\\\\\"', '\\\\\\\\', '][}{,', '\\u005d\\"]', 'x\\\\\\\\\\"}']
  const docs = []
  for (const [k, t] of tricky.entries()) {
    const records = []
    for (let shift = 0; shift < 70; shift++) records.push(shiftedRecord(shift, shift, t))
    docs.push({ name: `tricky string ${k} at every offset`, format: 'json', text: `{"items":[${records.join(',')}]}` })
    docs.push({ name: `tricky string ${k} in an array, CRLF`, format: 'array', text: `[\r\n${records.join(',\r\n')}\r\n]` })
  }
  return docs
}

/** Records of generated shapes, written minified, pretty-printed, with tabs and with CRLF. */
function layouts () {
  const records = []
  for (let k = 0; k < 400; k++) {
    records.push({ id: k, name: '測試資料 "q" \\ ' + k, tags: k % 3 === 0 ? [] : ['a', [k, { b: null }]], price: k / 7, o: {} })
  }
  const doc = { meta: { n: 1 }, items: records, tail: [1, 2] }
  const lines = records.map(function line (r) { return JSON.stringify(r) })
  const mixed = [{ a: 1 }, 2, 'three', { b: [4] }, null, true, [5], -65e2]
  return [
    { name: 'minified', format: 'json', text: JSON.stringify(doc) },
    { name: 'pretty-printed', format: 'json', text: JSON.stringify(doc, null, 2) },
    { name: 'tab-indented', format: 'json', text: JSON.stringify(doc, null, '\t') },
    { name: 'CRLF pretty-printed', format: 'json', text: JSON.stringify(doc, null, 1).replace(/\n/g, '\r\n') },
    { name: 'an array, one record a line', format: 'array', text: '[' + lines.join(',\n') + ']' },
    {
      name: '"items" repeated',
      format: 'json',
      text: `{"items":${JSON.stringify(records.slice(0, 50))},"x":1,"items":5,"items":${JSON.stringify(records.slice(50, 120))}}`
    },
    {
      name: '"items" spelt with escapes, twice',
      format: 'json',
      text: `{"it\\u0065ms":${JSON.stringify(records.slice(0, 40))},"items":${JSON.stringify(records.slice(7, 90))}}`
    },
    {
      name: 'records longer than the cutter\'s window',
      format: 'json',
      text: `{"items":[{"a":1},{"big":"${'z'.repeat(300 * 1024)}","n":[[[]]]},{"b":[2]},{"c":"${'y\\"'.repeat(70 * 1024)}"}]}`
    },
    { name: 'scalars and strings among records', format: 'array', text: JSON.stringify(mixed) },
    { name: 'empty records array', format: 'json', text: '{"items": [ \n ], "after": {"x": [1]}}' }
  ]
}

/** Nesting at the depth limit (`depth`) and one past it, in and among records. */
function nesting (depth) {
  // a record sits under the top object and the records array: `depth - 2` levels are its own
  function deep (levels) { return '['.repeat(levels) + '0' + ']'.repeat(levels) }
  return [
    { name: `a record nested to the limit ${depth}`, format: 'json', text: `{"items":[{"a":1},${deep(depth - 2)},{"b":2}]}` },
    { name: `a record nested past the limit ${depth}`, format: 'json', text: `{"items":[{"a":1},${deep(depth - 1)},{"b":2}]}` },
    { name: `an array record nested past the limit ${depth}`, format: 'array', text: `[{"a":1},${deep(depth)},{"b":2}]` }
  ]
}

/** Faults between records and inside them, each after valid records. */
function faults () {
  const lead = '{"items":[' + Array.from({ length: 30 }, function record (_, k) { return `{"id":${k},"s":"${'w'.repeat(k)}"}` }).join(',')
  const endings = {
    'two commas': ',,{"a":1}]}',
    'a missing comma': ',{"a":1} {"b":2}]}',
    'a trailing comma': ',{"a":1},]}',
    'a closing brace for the array': ',{"a":1}}}',
    'a colon between records': ',{"a":1}:{"b":2}]}',
    'a backslash outside strings': ',{"a":1},\\{"b":2}]}',
    'a backslash inside a record': ',{"a":1,\\"b":2},{"c":3}]}',
    'mismatched brackets': ',{"a":[1}},{"b":2}]}',
    'an unclosed string': ',{"a":"1}]}',
    'a control byte in a string': ',{"a":"1\u0001"},{"b":2}]}',
    'a bare word': ',{"a":1},nope,{"b":2}]}',
    'an early end': ',{"a":[1,2',
    'text after the document': ',{"a":1}]} {"x":1}'
  }
  const docs = []
  for (const [name, end] of Object.entries(endings)) docs.push({ name, format: 'json', text: lead + end })
  return docs
}

/** @param {number} depth the nesting limit the documents are built around */
export function cutterDocuments (depth) {
  return [...acrossWords(), ...layouts(), ...nesting(depth), ...faults()]
}
