/**
 * The backpressure experiment: why /good stays flat. A client process sends
 * one gzipped NDJSON body to POST /backpressure/:token, which streams it
 * through gunzip and a line batcher to a consumer that takes a set time per
 * batch. With the switch on "pipeline" the consumer's pace travels back
 * stream by stream to the socket, the kernel's queues and the client's
 * writes; on "ignore" the consumer's buffer takes the whole body until a cap
 * stops it. Every buffer is read every SAMPLE_MS (./run.js) while it runs and sent
 * as the run's progress (`pipeline`, docs/backpressure.md). The registry's
 * entry (experiments/index.js); the folder also holds the routes, the client,
 * the bench adapter.
 */
import { KiB } from '../../lib/util/units.js'
import { SAMPLE_MS } from './run.js'
import { BATCH_BYTES } from './stages.js'

export { params, normalizeParams } from './settings.js'
export { run } from './run.js'

export const name = 'backpressure'

export const title = 'Backpressure: a slow consumer, seen from the socket'

export const description = 'Sends one gzipped NDJSON body from a client process to POST /backpressure/:token, which streams it ' +
  `through gunzip and a line batcher to a consumer that waits a set time per ${BATCH_BYTES / KiB} KiB batch, and shows every buffer ` +
  `on the way every ${SAMPLE_MS} ms: the client's unsent bytes, the kernel's queues, each stream against its highWaterMark, ` +
  'the server\'s RSS and each side\'s rate. The switch writes to the consumer honouring write()\'s return (pipeline) or not ' +
  '(ignore); it, the rate and the delay change while the run runs.'
