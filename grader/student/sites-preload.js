/**
 * sites-writer.js's sampler, loaded first (NODE_OPTIONS=--import) by a Node service started for its sites: each
 * process writes STREAMLAB_SITES_DIR/<pid>.json; one without that variable samples nothing.
 */
import path from 'node:path'
import { startSiteWriter } from './sites-writer.js'

const dir = process.env.STREAMLAB_SITES_DIR
if (typeof dir === 'string' && path.isAbsolute(dir)) startSiteWriter({ file: path.join(dir, `${process.pid}.json`) })
