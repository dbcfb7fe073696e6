/**
 * One maintenance task at a time inside a serve (gc, blocks migrate): a
 * second one is refused with the name of the one running, rather than
 * sweeping a store that is being moved. serve's scheduled gc is the
 * exception: it skips its turn when another task runs, and a task started
 * while it runs waits for it to end (gc-schedule.ts).
 */
import { PindError } from '../../kernel/errors.js'

/** Another maintenance task runs (an admin answer: 409). */
export class MaintenanceBusyError extends PindError {
  override name = 'MaintenanceBusyError'
}

export class Maintenance {
  private running: { task: string, done: Promise<void>, waitable: boolean } | undefined

  /** `waitable`: a task started meanwhile waits for this one instead of being refused */
  async run<T> (task: string, fn: () => Promise<T>, opts: { waitable?: boolean } = {}): Promise<T> {
    while (this.running?.waitable === true) await this.running.done
    if (this.running != null) throw new MaintenanceBusyError(`a ${this.running.task} is running in this serve; try again when it has finished`)
    let end = (): void => {}
    this.running = { task, done: new Promise<void>(resolve => { end = resolve }), waitable: opts.waitable === true }
    try {
      return await fn()
    } finally {
      this.running = undefined
      end()
    }
  }

  /** whether a task runs now */
  get busy (): boolean {
    return this.running != null
  }
}
