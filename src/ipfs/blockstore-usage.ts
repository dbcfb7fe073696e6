/**
 * Block files and their bytes in the blockstore folder. A walk counts them
 * (at start, then rarely, to correct any drift); in between, commits and gc
 * report what they add and delete, so the figures are current.
 */
import { opendir, stat } from 'node:fs/promises'
import { join } from 'node:path'

export interface Usage { blocks: number, bytes: number }

export async function blockstoreUsage (blocksDir: string): Promise<Usage> {
  let blocks = 0
  let bytes = 0
  for await (const dir of await opendir(blocksDir)) {
    if (!dir.isDirectory()) continue
    for await (const f of await opendir(join(blocksDir, dir.name))) {
      if (!f.isFile() || !f.name.endsWith('.data')) continue
      try {
        bytes += (await stat(join(blocksDir, dir.name, f.name))).size
        blocks++
      } catch {}
    }
  }
  return { blocks, bytes }
}

/** The blockstore's current usage: a walk, kept up to date by the writers' reports. */
export class BlockstoreUsageTracker {
  private base: Promise<Usage> | undefined
  private at = 0
  /** changes reported since the walk in progress (or the last one) began */
  private delta: Usage = { blocks: 0, bytes: 0 }

  constructor (private readonly blocksDir: string, private readonly rewalkMs = 3_600_000) {}

  added (blocks: number, bytes: number): void {
    this.delta.blocks += blocks
    this.delta.bytes += bytes
  }

  removed (blocks: number, bytes: number): void {
    this.added(-blocks, -bytes)
  }

  async current (): Promise<Usage> {
    if (this.base == null || Date.now() - this.at > this.rewalkMs) {
      // changes from now on are on top of this walk (one that races it may be counted twice until the next walk)
      this.at = Date.now()
      this.delta = { blocks: 0, bytes: 0 }
      const walk = blockstoreUsage(this.blocksDir)
      this.base = walk
      walk.catch(() => { if (this.base === walk) this.base = undefined })
    }
    const b = await this.base
    return { blocks: Math.max(0, b.blocks + this.delta.blocks), bytes: Math.max(0, b.bytes + this.delta.bytes) }
  }
}
