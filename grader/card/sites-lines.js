/** The memory area's allocation sites as the card's text and JUnit say them: a line per line of code, or why none. */

/** The card's `memorySites`: a --json document's own, or the first memory check's that took them; else null. */
export function memorySitesOf (card) {
  if (card.memorySites !== undefined) return card.memorySites
  for (const check of card.checks) {
    if (check.area === 'memory' && check.details?.sites) return check.details.sites
  }
  return null
}

export function sitesLines (sites) {
  if (sites === null) return []
  if (sites.lines.length === 0) return [`line: none named. ${sites.note}`]
  const of = sites.allocatedMiB == null ? '' : ` of the ${sites.allocatedMiB.toFixed(1)} MiB its lines allocated`
  const growth = sites.growthMiB === null ? '' : `the process grew +${sites.growthMiB.toFixed(1)} MiB (RSS, read from outside); `
  return [
    ...sites.lines.map(function described (l) {
      const share = l.share === null ? '' : `, ${Math.round(l.share * 100)} %${of}`
      return `line: ${l.file}:${l.line} in ${l.functionName}: ${l.allocatedMiB.toFixed(1)} MiB allocated ` +
        `(${l.kinds.join(', ')})${share}${l.code === null ? '' : ` · ${l.code}`}`
    }),
    `sites: ${growth}${sites.note}`
  ]
}
