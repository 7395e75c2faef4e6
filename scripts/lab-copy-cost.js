#!/usr/bin/env node
/**
 * What the copy of the lab costs that a grading run makes as root, for the
 * student's user to read (grader/student/lab-copy.js,
 * docs/grading-isolation.md): its files, its size and the time to make it,
 * on this machine. The copy is removed after.
 *
 *   node scripts/lab-copy-cost.js
 */
import { LabCopy } from '../grader/student/lab-copy.js'
import { formatMiB } from '../lib/util/units.js'

const copy = new LabCopy()
try {
  copy.root()
  const { files, bytes, ms } = copy.cost
  console.log(`the lab's copy for the student's user: ${files} files, ${formatMiB(bytes)}, made in ${ms.toFixed(0)} ms`)
} finally {
  copy.close()
}
