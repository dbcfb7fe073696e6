/**
 * One maintenance task at a time inside a serve (gc, blocks migrate): a
 * second one is refused with the name of the one running, rather than
 * sweeping a store that is being moved.
 */
import { PindError } from '../errors.js'

/** Another maintenance task runs (an admin answer: 409). */
export class MaintenanceBusyError extends PindError {
  override name = 'MaintenanceBusyError'
}

export class Maintenance {
  private running: string | undefined

  async run<T> (task: string, fn: () => Promise<T>): Promise<T> {
    if (this.running != null) throw new MaintenanceBusyError(`a ${this.running} is running in this serve; try again when it has finished`)
    this.running = task
    try {
      return await fn()
    } finally {
      this.running = undefined
    }
  }
}
