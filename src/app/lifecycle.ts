/**
 * Serve's components started in order and stopped in the reverse order, each
 * step named: a step that fails to stop is logged and the next one runs; the
 * step still running is known, so a stop that hangs (a peer that never lets
 * go of a stream, a store that never answers) can say where it hangs when
 * serve gives up waiting (cli/serve.ts).
 */
import type { Logger } from '../kernel/log.js'

/** a part of serve that is built first and started later, as Helia's and libp2p's components are */
export interface Component {
  start(): Promise<void> | void
  stop(): Promise<void> | void
}

/** a component from work that starts when it is called and returns its stop (a periodic sweep) */
export function startedBy (start: () => { stop(): Promise<void> }): Component {
  let running: { stop(): Promise<void> } | undefined
  return {
    start: () => { running ??= start() },
    stop: async () => { await running?.stop() }
  }
}

export class Lifecycle {
  private readonly steps: Array<{ name: string, fn: () => Promise<void> | void }> = []
  private running: string | undefined

  constructor (private readonly log: Logger) {}

  /** starts `c`; its stop runs at the stop, before that of every component started earlier */
  async start (name: string, c: Component): Promise<void> {
    await c.start()
    this.add(name, async () => { await c.stop() })
  }

  /** `fn` runs at the stop, before every step added earlier (what was started by other means: a lock, a listener) */
  add (name: string, fn: () => Promise<void> | void): void {
    this.steps.push({ name, fn })
  }

  /** the step running now (undefined: none) */
  current (): string | undefined {
    return this.running
  }

  async stop (): Promise<void> {
    for (const step of this.steps.splice(0).reverse()) {
      this.running = step.name
      const t0 = Date.now()
      try {
        await step.fn()
      } catch (err) {
        this.log.error('error while stopping', { step: step.name, error: err })
      }
      this.log.debug('stopped', { step: step.name, ms: Date.now() - t0 })
    }
    this.running = undefined
  }
}

/**
 * How long the steps after the HTTP drain may take, all together. With the
 * default --shutdown-timeout (10 s) a stop ends within 25 s, inside the
 * systemd unit's TimeoutStopSec (30 s); a --shutdown-drain comes before and
 * adds to it (the README says to raise TimeoutStopSec by as much).
 */
export const STOP_STEPS_MS = 15_000

/**
 * Runs `stop` for at most `limitMs`. Past that, it gives up waiting and says
 * which step it was in: serve then exits as a crash would, and what the stop
 * did not finish is recovered at the next start (staged uploads removed,
 * settlement notes reconciled; the ledger is LMDB, committed or not at all).
 */
export async function stopWithin (stop: () => Promise<void>, limitMs: number, where: () => string | undefined, log: Logger): Promise<'stopped' | 'gave up'> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'gave up'>(resolve => { timer = setTimeout(() => resolve('gave up'), limitMs) })
  try {
    const outcome = await Promise.race([stop().then(() => 'stopped' as const), late])
    if (outcome === 'gave up') log.error('stopping took too long: exiting without finishing it', { step: where() ?? 'unknown', waitedSeconds: limitMs / 1000 })
    return outcome
  } finally {
    clearTimeout(timer)
  }
}
