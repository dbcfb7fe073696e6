/**
 * A task serve runs every interval, one run at a time: `run()` starts one now
 * (or joins the one under way), `stop()` ends the schedule and waits for a run
 * under way. The expiry sweeper and the archiver are such tasks.
 */
export interface Periodic<T> {
  run(): Promise<T>
  stop(): Promise<void>
}

/** `when`: scheduled runs happen only while it says so (this front end holds the work's lease); run() always runs */
export function startPeriodic<T> (task: () => Promise<T>, intervalMs: number, onError: (err: Error) => void, when: () => boolean = () => true): Periodic<T> {
  let running: Promise<T> | undefined
  let stopped = false
  const run = async (): Promise<T> => {
    running ??= task().finally(() => { running = undefined })
    return await running
  }
  const timer = setInterval(() => {
    if (stopped || !when()) return
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
