/**
 * A load in a measurement window from a settled baseline (lib/experiments/window.js): `start(hooks)` runs it in a process
 * of its own; the peak and the CPU are read once `expected` answers are in, before the results cross over IPC. `relay` sees progress.
 */
export async function loadInWindow (ctx, expected, start, relay = null) {
  await ctx.settle()
  const endMeasure = ctx.measure()
  // this process is the lab's worker: `cpuSeconds` is its CPU over the load, every thread (the load runs apart)
  const cpuStart = process.cpuUsage()
  let server = null
  let cpuSeconds = null
  function endWindow () {
    const cpu = process.cpuUsage(cpuStart)
    cpuSeconds = (cpu.user + cpu.system) / 1e6
    server = endMeasure()
  }
  const load = await start({
    signal: ctx.signal,
    onSpawn: ctx.trackProcess,
    onProgress: function readPeakFirst (progress) {
      if (progress.done === expected && server === null) endWindow()
      relay?.(progress)
    }
  })
  if (server === null) endWindow()
  return { load, server, cpuSeconds }
}
