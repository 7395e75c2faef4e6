// The export experiment's data, desks and items, made in SQL with generate_series: every value is a function
// of the row number, so two databases seeded with the same sizes hold the same rows. README.md.

/** Bump when the generated rows change, so older data is reseeded. */
const SEED_VERSION = 1

export const SEED_DEFAULTS = Object.freeze({ desks: 200_000, items: 1_000_000 })
export const SEED_LIMITS = Object.freeze({ desks: 10_000_000, items: 100_000_000 })

/** Rows per INSERT ... SELECT: small enough for a progress bar to move, big enough to cost nothing. */
const CHUNK_ROWS = 50_000

const CREATE_DESKS = `CREATE TABLE desks (
  id integer NOT NULL,
  name text NOT NULL,
  building text NOT NULL,
  floor integer NOT NULL
)`

const CREATE_ITEMS = `CREATE TABLE items (
  id integer NOT NULL,
  desk_id integer NOT NULL,
  sku text NOT NULL,
  name text NOT NULL,
  quantity integer NOT NULL,
  price_cents integer NOT NULL,
  updated_at timestamptz NOT NULL
)`

const INSERT_DESKS = `INSERT INTO desks (id, name, building, floor)
SELECT g, 'Desk ' || g, chr(65 + g % 5), 1 + g % 12
FROM generate_series($1::integer, $2::integer) AS g`

// bigint before multiplying: g * 7919 passes integer's range from g = 271,000
const INSERT_ITEMS = `INSERT INTO items (id, desk_id, sku, name, quantity, price_cents, updated_at)
SELECT g,
  1 + ((g::bigint * 7919) % $3::integer)::integer,
  'SKU-' || lpad(g::text, 9, '0'),
  'Item ' || g,
  g % 100,
  ((g::bigint * 7907) % 100000)::integer,
  timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second'
FROM generate_series($1::integer, $2::integer) AS g`

/** Check seed sizes (`prefix` names them in the message, e.g. 'database.seed.'). */
export function normalizeSeedSizes (sizes, prefix = '') {
  const out = {}
  for (const name of ['desks', 'items']) {
    const value = sizes?.[name]
    const min = name === 'desks' ? 1 : 0
    if (!Number.isSafeInteger(value) || value < min || value > SEED_LIMITS[name]) {
      throw new TypeError(`${prefix}${name} must be an integer from ${min} to ${SEED_LIMITS[name]}, got ${value}`)
    }
    out[name] = value
  }
  return out
}

/** What `streamlab_seed` says is seeded; null: nothing the lab made. */
export async function readSeed (client) {
  const { rows: [tables] } = await client.query(
    "SELECT to_regclass('streamlab_seed') IS NOT NULL AS meta, to_regclass('desks') IS NOT NULL AS desks, " +
    "to_regclass('items') IS NOT NULL AS items")
  if (!tables.meta) return null
  const { rows } = await client.query('SELECT desks, items, version, seeded_at FROM streamlab_seed LIMIT 1')
  if (rows.length === 0 || !tables.desks || !tables.items) return null
  return { desks: rows[0].desks, items: rows[0].items, version: rows[0].version, seededAt: rows[0].seeded_at.toISOString() }
}

/**
 * Seed `desks` and `items` unless these sizes are there, in one transaction on a connection of its own; throws
 * when tables of those names exist that the lab did not make.
 */
export async function seedDatabase (client, sizes, { onProgress, signal } = {}) {
  const { desks, items } = normalizeSeedSizes(sizes)
  const started = performance.now()
  const current = await readSeed(client)
  if (current && current.desks === desks && current.items === items && current.version === SEED_VERSION) {
    return { changed: false, desks, items, ms: 0 }
  }
  if (current === null) await refuseForeignTables(client)
  const total = desks + items
  let done = 0
  function report (stage) {
    onProgress?.({ done, total, stage })
  }
  await client.query('BEGIN')
  try {
    await client.query('DROP TABLE IF EXISTS items, desks, streamlab_seed')
    await client.query(CREATE_DESKS)
    await client.query(CREATE_ITEMS)
    report('desks')
    for (let from = 1; from <= desks; from += CHUNK_ROWS) {
      signal?.throwIfAborted()
      const to = Math.min(desks, from + CHUNK_ROWS - 1)
      await client.query(INSERT_DESKS, [from, to])
      done += to - from + 1
      report('desks')
    }
    for (let from = 1; from <= items; from += CHUNK_ROWS) {
      signal?.throwIfAborted()
      const to = Math.min(items, from + CHUNK_ROWS - 1)
      await client.query(INSERT_ITEMS, [from, to, desks])
      done += to - from + 1
      report('items')
    }
    signal?.throwIfAborted()
    report('indexes')
    // keys after the rows: building an index once is much cheaper than growing it row by row
    await client.query('ALTER TABLE desks ADD PRIMARY KEY (id)')
    await client.query('ALTER TABLE items ADD PRIMARY KEY (id)')
    await client.query('ALTER TABLE items ADD FOREIGN KEY (desk_id) REFERENCES desks (id)')
    await client.query('CREATE TABLE streamlab_seed ' +
      '(desks integer NOT NULL, items integer NOT NULL, version integer NOT NULL, seeded_at timestamptz NOT NULL)')
    await client.query('INSERT INTO streamlab_seed VALUES ($1, $2, $3, now())', [desks, items, SEED_VERSION])
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK').catch(function ignoreRollbackError () {
      // the connection itself failed: the server rolls back on its own
    })
    throw err
  }
  report('analyze')
  // the planner needs statistics to pick the join it would pick in production
  await client.query('ANALYZE desks')
  await client.query('ANALYZE items')
  return { changed: true, desks, items, ms: Math.round(performance.now() - started) }
}

async function refuseForeignTables (client) {
  const { rows: [found] } = await client.query(
    "SELECT to_regclass('desks') IS NOT NULL AS desks, to_regclass('items') IS NOT NULL AS items")
  const names = ['desks', 'items'].filter(function exists (name) { return found[name] })
  if (names.length > 0) {
    const [exist, was] = names.length === 1 ? ['exists', 'was'] : ['exist', 'were']
    throw new Error(`table ${names.join(' and ')} already ${exist} and ${was} not made by streamlab: ` +
      'give the lab a database of its own (it drops and recreates desks and items when it seeds)')
  }
}
