/**
 * A load in a measurement window from a settled baseline (lib/experiments/window.js): `start(hooks)` runs it in a process
 * of its own; the peak is read once `expected` answers are in, before the results cross over IPC. `relay` sees progress.
 */
export async function loadInWindow (ctx, expected, start, relay = null) {
  await ctx.settle()
  const endMeasure = ctx.measure()
  let server = null
  const load = await start({
    signal: ctx.signal,
    onSpawn: ctx.trackProcess,
    onProgress: function readPeakFirst (progress) {
      if (progress.done === expected && server === null) server = endMeasure()
      relay?.(progress)
    }
  })
  server ??= endMeasure()
  return { load, server }
}
