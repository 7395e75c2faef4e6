/** sites-writer.js's sampler for a started Node service (NODE_OPTIONS=--import): each process writes STREAMLAB_SITES_DIR/<pid>.json. */
import path from 'node:path'
import { startSiteWriter } from './sites-writer.js'

const dir = process.env.STREAMLAB_SITES_DIR
if (typeof dir === 'string' && path.isAbsolute(dir)) startSiteWriter({ file: path.join(dir, `${process.pid}.json`) })
