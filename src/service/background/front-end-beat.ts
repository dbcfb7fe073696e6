/**
 * This serve in the ledger's list of front ends (src/ledger/coordination.ts):
 * it beats every interval and leaves at a clean stop (marked stopped, not
 * removed: a front end that does not come back is forgotten, and its provider
 * records handed over, by ./front-end-takeover.ts), so `pind status` names
 * the serves sharing the ledger and when each was last seen. Before its first
 * beat it refuses to join serves it cannot work beside: blocks on a disk of
 * their own or in another bucket (a pin made through one would be missing on
 * the others), or the same settler key (their settlements would race for the
 * key's nonces).
 */
import type { FrontEndRecord, FrontEnds } from '../../ledger/coordination.js'
import type { Logger } from '../../kernel/log.js'

/** a front end counts as alive for this many of its beat intervals */
export const ALIVE_BEATS = 3

export class FrontEndConflictError extends Error {
  override name = 'FrontEndConflictError'
}

export interface FrontEndBeatOptions {
  frontEnds: FrontEnds
  /** this serve as it registers (seenAt is the ledger's) */
  self: Omit<FrontEndRecord, 'seenAt'>
  /** whether its blocks are in a store the others can read (S3), not its own disk */
  sharedBlocks: boolean
  intervalMs: number
  log: Logger
}

export class FrontEndBeat {
  private timer: NodeJS.Timeout | undefined

  constructor (private readonly o: FrontEndBeatOptions) {}

  async start (): Promise<void> {
    const others = (await this.o.frontEnds.list(this.o.intervalMs * ALIVE_BEATS)).filter(f => f.id !== this.o.self.id && f.leftAt == null)
    const conflict = conflictWith(this.o.self, this.o.sharedBlocks, others)
    if (conflict != null) throw new FrontEndConflictError(conflict)
    await this.o.frontEnds.beat(this.o.self)
    this.timer = setInterval(() => {
      this.o.frontEnds.beat(this.o.self).catch((err: unknown) => { this.o.log.warn('could not record this front end\'s beat in the ledger', { error: (err as Error).message }) })
    }, this.o.intervalMs)
    this.timer.unref()
  }

  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.o.frontEnds.leave(this.o.self.id).catch(() => {})
  }
}

/** why this serve may not join `others` on one ledger; undefined when it may */
export function conflictWith (self: Omit<FrontEndRecord, 'seenAt'>, sharedBlocks: boolean, others: FrontEndRecord[]): string | undefined {
  const other = others[0]
  if (other == null) return undefined
  const seen = `${other.id} at ${other.url}, seen ${other.seenAt}`
  if (!sharedBlocks) {
    return `another serve shares this ledger (${seen}) and this one keeps its blocks on its own disk: front ends sharing a ledger need shared blocks; start every one with --blockstore s3 and the same --s3-bucket and --s3-prefix`
  }
  const apart = others.find(f => f.blockstore !== self.blockstore)
  if (apart != null) {
    return `another serve shares this ledger (${apart.id} at ${apart.url}) with its blocks elsewhere (${apart.blockstore}; here: ${self.blockstore}): front ends sharing a ledger need the same --blockstore s3, --s3-bucket and --s3-prefix`
  }
  const sameKey = self.settler != null ? others.find(f => f.settler?.toLowerCase() === self.settler?.toLowerCase()) : undefined
  if (sameKey != null) {
    return `another serve sharing this ledger (${sameKey.id} at ${sameKey.url}) settles with the same settler key (${self.settler}): their transactions would race for its nonces; give each front end a settler key of its own (--settler-key-file), or settle through --facilitator-url`
  }
  return undefined
}
