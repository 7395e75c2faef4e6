/**
 * Imported first by the process that loads a submission outside the lab
 * (`node --import`): Node resolves a bare specifier ('raw-body') from the
 * importing file's folder upwards, so a submission in /tmp finds nothing,
 * and ESM resolution reads no NODE_PATH. A resolve hook
 * (allow-packages-hooks.js) resolves the allowed packages (packages.js)
 * again from the lab's package.json when the usual resolution fails; any
 * other package still fails as it would.
 */
import { register } from 'node:module'
import { ALLOWED_PACKAGES } from './packages.js'

register('./allow-packages-hooks.js', import.meta.url, { data: { allowed: ALLOWED_PACKAGES } })
