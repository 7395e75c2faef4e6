/**
 * The packages a submission may import, wherever on disk it lies: the
 * ones the exercises allow (exercises/README.md), resolved from the lab's
 * own node_modules. Node resolves a bare specifier ('raw-body') from the
 * importing file's folder upwards, so a submission in /tmp or a student's
 * home finds nothing; NODE_PATH is not read by ESM resolution. A resolve
 * hook (grader/allow-packages-hooks.js) answers instead: when the usual
 * resolution fails for one of these packages, it resolves it again as if
 * the lab's package.json had imported it. Any other package still fails
 * as it would.
 *
 * The process that loads a submission starts with this file imported
 * first: `node --import <ALLOW_PACKAGES_IMPORT> …` (its path is exported for
 * the grader that starts the process).
 */
import { register } from 'node:module'
import { fileURLToPath } from 'node:url'

/** What a submission may import besides Node's own modules. */
export const ALLOWED_PACKAGES = Object.freeze(['raw-body', '@streamparser/json', 'express'])

/** This file's path, for `--import`. */
export const ALLOW_PACKAGES_IMPORT = fileURLToPath(import.meta.url)

register('./allow-packages-hooks.js', import.meta.url, { data: { allowed: ALLOWED_PACKAGES } })
