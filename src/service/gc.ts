/**
 * Garbage collection: first sweep pins whose pinned_until is more than the
 * grace period ago (marked `expired`, references released), then remove
 * every block no live pin references — blocks of unpinned, expired, failed
 * and replaced pins, and of uploads that were never paid or recorded.
 *
 * Mark: the ledger's referenced blocks (by multihash, as the blockstore names
 * its files). Sweep: walk the blockstore's folders; delete unmarked files in
 * batches while holding the commit lock exclusively, skipping any block a
 * pin started to reference since the mark (commits hold the lock shared, so
 * a block is never deleted between its commit and its ledger record).
 * In-flight uploads and fetches live in staging/, which gc never touches;
 * blocks that settlement notes hold for a paid upload still to be recorded
 * are kept too (GcDeps.held).
 * Deleting is idempotent: an interrupted gc is simply run again.
 */
import { opendir, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { NextToLast } from 'blockstore-fs/sharding'
import { CID } from 'multiformats/cid'
import type { CommitLock } from '../ipfs/commit-lock.js'
import type { PinLedger } from '../ledger/pins.js'

const SHARDING = new NextToLast()
const BATCH = 1000
const PARALLEL = 32

export interface GcDeps {
  pins: PinLedger
  blocksDir: string
  lock: CommitLock
  /** expired pins are swept this long after their pinned_until */
  graceMs: number
  /**
   * Blocks (CIDs) that settlement notes hold for an upload reconciliation
   * may still record: kept, though no pin references them yet (a crash
   * between an upload's commit and its ledger record leaves them so).
   */
  held?: () => Iterable<string>
  /** told how many blocks (and bytes) each batch deleted (usage metrics) */
  onRemoved?: (blocks: number, bytes: number) => void
}

export interface GcOptions {
  dryRun?: boolean
}

export interface GcProgress {
  phase: 'expire' | 'mark' | 'sweep'
  scanned: number
  removed: number
  freedBytes: number
}

export interface GcResult {
  dryRun: boolean
  expiredPins: number
  markedBlocks: number
  scannedBlocks: number
  removedBlocks: number
  freedBytes: number
  keptBlocks: number
  ms: number
}

export async function runGc (d: GcDeps, opts: GcOptions = {}, onProgress?: (p: GcProgress) => void, signal?: AbortSignal): Promise<GcResult> {
  const t0 = performance.now()
  const dryRun = opts.dryRun === true
  const progress: GcProgress = { phase: 'expire', scanned: 0, removed: 0, freedBytes: 0 }
  const expiredPins = await sweepExpired(d.pins, new Date(Date.now() - d.graceMs), dryRun, signal)

  progress.phase = 'mark'
  onProgress?.(progress)
  const protectedNow = new Set<string>()
  const unwatch = d.pins.watchNewRefs((keys) => { for (const k of keys) protectedNow.add(fileOf(k)) })
  try {
    const marked = new Set<string>()
    for (const k of d.pins.referencedBlocks()) marked.add(fileOf(k))
    const held = new Set<string>()
    for (const c of d.held?.() ?? []) held.add(fileOf(c))
    if (dryRun) {
      // a real run would first release the blocks of pins expiring now: unmark those no other pin holds
      const released = new Map<string, number>()
      for (const id of d.pins.expiredBy(new Date(Date.now() - d.graceMs))) {
        for (const k of d.pins.blocksOf(id)) released.set(k, (released.get(k) ?? 0) + 1)
      }
      for (const [k, n] of released) if (d.pins.refCount(k) <= n) marked.delete(fileOf(k))
    }

    progress.phase = 'sweep'
    let kept = 0
    let batch: Array<{ path: string, file: string }> = []
    // stat and unlink a batch with bounded parallelism (the file system, not JS, is the limit)
    const each = async (todo: typeof batch, fn: (c: typeof batch[number]) => Promise<void>): Promise<void> => {
      for (let i = 0; i < todo.length; i += PARALLEL) await Promise.all(todo.slice(i, i + PARALLEL).map(fn))
    }
    const flush = async (): Promise<void> => {
      const todo = batch
      batch = []
      if (dryRun) {
        await each(todo, async (c) => {
          // (read the size first: `x += await …` would add to a stale x)
          try {
            const size = (await stat(c.path)).size
            progress.freedBytes += size
            progress.removed++
          } catch {}
        })
        return
      }
      const before = { removed: progress.removed, freed: progress.freedBytes }
      await d.lock.exclusive(async () => {
        await each(todo, async (c) => {
          if (protectedNow.has(c.file)) { kept++; return }
          try {
            const size = (await stat(c.path)).size
            await unlink(c.path)
            progress.removed++
            progress.freedBytes += size
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
          }
        })
      }).finally(() => { d.onRemoved?.(progress.removed - before.removed, progress.freedBytes - before.freed) })
    }
    for await (const dir of await opendir(d.blocksDir)) {
      if (!dir.isDirectory()) continue
      for await (const f of await opendir(join(d.blocksDir, dir.name))) {
        signal?.throwIfAborted()
        if (!f.isFile() || !f.name.endsWith('.data')) continue
        progress.scanned++
        if (marked.has(f.name) || held.has(f.name)) { kept++; continue }
        batch.push({ path: join(d.blocksDir, dir.name, f.name), file: f.name })
        if (batch.length >= BATCH) {
          await flush()
          onProgress?.(progress)
        }
      }
    }
    await flush()
    onProgress?.(progress)
    return {
      dryRun,
      expiredPins,
      markedBlocks: marked.size,
      scannedBlocks: progress.scanned,
      removedBlocks: progress.removed,
      freedBytes: progress.freedBytes,
      keptBlocks: kept,
      ms: Math.round(performance.now() - t0)
    }
  } finally {
    unwatch()
  }
}

/** Marks pins expired whose pinned_until is at or before `cutoff`; returns how many (would be) swept. */
export async function sweepExpired (pins: PinLedger, cutoff: Date, dryRun = false, signal?: AbortSignal): Promise<number> {
  const ids = [...pins.expiredBy(cutoff)]
  if (dryRun) return ids.length
  let n = 0
  for (const id of ids) {
    signal?.throwIfAborted()
    if (await pins.remove(id, 'expired') != null) n++
  }
  return n
}

/** The blockstore file name of a block CID (files are named by multihash). */
function fileOf (cid: string): string {
  return SHARDING.encode(CID.parse(cid)).file
}
