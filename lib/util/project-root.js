/** The checkout's root folder: where `test-data/`, `docs/` and `node_modules/` are. */
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
