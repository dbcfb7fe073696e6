/**
 * The block store's current usage (blocks and bytes). A full walk (a folder
 * walk on disk, a bucket listing in S3) counts them at start, then rarely, to
 * correct any drift; in between, commits and gc report what they add and
 * delete, so the figures are current without a walk per scrape.
 */
export interface Usage { blocks: number, bytes: number }

export class BlockstoreUsageTracker {
  private base: Promise<Usage> | undefined
  private at = 0
  /** changes reported since the walk in progress (or the last one) began */
  private delta: Usage = { blocks: 0, bytes: 0 }

  /** `walk`: counts every stored block (the backend's `usage()`) */
  constructor (private readonly walk: () => Promise<Usage>, private readonly rewalkMs = 3_600_000) {}

  added (blocks: number, bytes: number): void {
    this.delta.blocks += blocks
    this.delta.bytes += bytes
  }

  removed (blocks: number, bytes: number): void {
    this.added(-blocks, -bytes)
  }

  /** forgets the figures (the store was switched): the next read walks again */
  reset (): void {
    this.base = undefined
  }

  async current (): Promise<Usage> {
    if (this.base == null || Date.now() - this.at > this.rewalkMs) {
      // changes from now on are on top of this walk (one that races it may be counted twice until the next walk)
      this.at = Date.now()
      this.delta = { blocks: 0, bytes: 0 }
      const walk = this.walk()
      this.base = walk
      // a failed walk (a bucket away) is not kept: the next read tries again
      walk.catch(() => { if (this.base === walk) this.base = undefined })
    }
    const b = await this.base
    return { blocks: Math.max(0, b.blocks + this.delta.blocks), bytes: Math.max(0, b.bytes + this.delta.bytes) }
  }
}
