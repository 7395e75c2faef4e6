/**
 * The rows the seed makes, predicted from the row number as lib/db/seed.js's SQL makes them
 * (generate_series): the db specs hold what the exports answer to these.
 */

/**
 * What the export query answers for seeded item `id`.
 * @param {number} id
 * @param {number} desks the seeded desk count
 */
export function expectedRow (id, desks) {
  const deskId = 1 + Number((BigInt(id) * 7919n) % BigInt(desks))
  return {
    id,
    sku: `SKU-${String(id).padStart(9, '0')}`,
    name: `Item ${id}`,
    quantity: id % 100,
    price_cents: Number((BigInt(id) * 7907n) % 100000n),
    updated_at: new Date(Date.UTC(2026, 0, 1) + id * 1000).toISOString(),
    desk_id: deskId,
    desk_name: `Desk ${deskId}`,
    building: String.fromCharCode(65 + deskId % 5),
    floor: 1 + deskId % 12
  }
}
