/**
 * A task serve runs every interval, one run at a time: `run()` starts one now
 * (or joins the one under way), `stop()` ends the schedule and waits for a run
 * under way. The expiry sweeper and the archiver are such tasks.
 */
export interface Periodic<T> {
  run(): Promise<T>
  stop(): Promise<void>
}

export function startPeriodic<T> (task: () => Promise<T>, intervalMs: number, onError: (err: Error) => void): Periodic<T> {
  let running: Promise<T> | undefined
  let stopped = false
  const run = async (): Promise<T> => {
    running ??= task().finally(() => { running = undefined })
    return await running
  }
  const timer = setInterval(() => {
    if (stopped) return
    run().catch(onError)
  }, intervalMs)
  timer.unref()
  return {
    run,
    stop: async () => {
      stopped = true
      clearInterval(timer)
      await running?.catch(() => {})
    }
  }
}
