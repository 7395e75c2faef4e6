/**
 * The sampler of sites-writer.js, loaded first by a Node service the grader starts for its
 * allocation sites (`NODE_OPTIONS=--import=…`, grader/service/started-service.js): each Node
 * process of the service writes its table to STREAMLAB_SITES_DIR/<pid>.json. A process without
 * that variable (one the service started with an environment of its own) samples nothing.
 */
import path from 'node:path'
import { startSiteWriter } from './sites-writer.js'

const dir = process.env.STREAMLAB_SITES_DIR
if (typeof dir === 'string' && path.isAbsolute(dir)) startSiteWriter({ file: path.join(dir, `${process.pid}.json`) })
