/**
 * Garbage collection: first sweep pins whose pinned_until is more than the
 * grace period ago (marked `expired`, references released), then remove
 * every block no live pin references — blocks of unpinned, expired, failed
 * and replaced pins, and of uploads that were never paid or recorded.
 *
 * Mark: the ledger's referenced blocks (by name: the multihash, as both block
 * backends name blocks). Sweep: list the block backend page by page (folders
 * on disk, ListObjectsV2 pages in S3); delete unmarked blocks in batches
 * while holding the commit lock exclusively, skipping any block a pin
 * started to reference since the mark (commits hold the lock shared, so a
 * block is never deleted between its commit and its ledger record). Front
 * ends sharing the ledger and the block store: each batch also closes the
 * ledger's block fence and skips the blocks other front ends marked as
 * being written (commit-lock.ts).
 * In-flight uploads and fetches live in staging/, which gc never touches;
 * blocks that settlement notes hold for a paid upload still to be recorded
 * are kept too (GcDeps.held), and so are the blocks an upload with a
 * prepaid ticket has written straight to the store and not yet claimed
 * (GcDeps.inFlight, checked inside each delete batch, under the lock: an
 * upload registers a block under the lock, shared, before writing it).
 * Deleting is idempotent: an interrupted gc is simply run again.
 */
import { base32upper } from 'multiformats/bases/base32'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { PIN_CODECS } from '../../ipfs/codecs.js'
import { blockName, type BlockBackend, type StoredBlock } from '../../ipfs/block-backend.js'
import type { CommitLock } from '../../ipfs/commit-lock.js'
import type { InFlightBlocks } from '../../ipfs/in-flight-blocks.js'
import type { PinLedger } from '../../ledger/pins.js'

const BATCH = 1000

export interface GcDeps {
  pins: Pick<PinLedger, 'blocksOf' | 'expiredBy' | 'refCount' | 'referencedBlocks' | 'remove' | 'watchNewRefs'>
  /** where the blocks are: listed in pages, deleted in batches */
  blocks: Pick<BlockBackend, 'list' | 'sizeOf' | 'remove'>
  lock: Pick<CommitLock, 'exclusive'>
  /** expired pins are swept this long after their pinned_until */
  graceMs: number
  /**
   * Blocks (CIDs) that settlement notes hold for an upload reconciliation
   * may still record: kept, though no pin references them yet (a crash
   * between an upload's commit and its ledger record leaves them so).
   */
  held?: () => Promise<Iterable<string>>
  /** blocks (by name) that uploads in flight wrote straight to the store and have not claimed yet (in-flight-blocks.ts): never deleted */
  inFlight?: Pick<InFlightBlocks, 'has'>
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
  const unwatch = d.pins.watchNewRefs((keys) => { for (const k of keys) protectedNow.add(nameOf(k)) })
  try {
    const marked = new Set<string>()
    for await (const k of d.pins.referencedBlocks()) marked.add(nameOf(k))
    const held = new Set<string>()
    for (const c of await d.held?.() ?? []) held.add(nameOf(c))
    if (dryRun) {
      // a real run would first release the blocks of pins expiring now: unmark those no other pin holds
      const released = new Map<string, number>()
      for await (const id of d.pins.expiredBy(new Date(Date.now() - d.graceMs))) {
        for (const k of await d.pins.blocksOf(id)) released.set(k, (released.get(k) ?? 0) + 1)
      }
      for (const [k, n] of released) if (await d.pins.refCount(k) <= n) marked.delete(nameOf(k))
    }

    progress.phase = 'sweep'
    let kept = 0
    let batch: StoredBlock[] = []
    const flush = async (): Promise<void> => {
      const todo = batch
      batch = []
      if (todo.length === 0) return
      if (dryRun) {
        // sizes with bounded parallelism (on disk a stat each; a listing in S3 carries them)
        for (let i = 0; i < todo.length; i += 32) {
          const sizes = await Promise.all(todo.slice(i, i + 32).map(async b => await d.blocks.sizeOf(b)))
          for (const size of sizes) {
            if (size == null) continue
            progress.freedBytes += size
            progress.removed++
          }
        }
        return
      }
      const before = { removed: progress.removed, freed: progress.freedBytes }
      await d.lock.exclusive(async (marked) => {
        // (inside the exclusive lock and the closed fence: no upload, here or on another front end, registers a block while this batch is decided and deleted)
        const gone: StoredBlock[] = []
        for (const b of todo) {
          if (!protectedNow.has(b.name) && !marked.has(b.name) && d.inFlight?.has(b.name) !== true && !await referencedNow(d.pins, b.name)) gone.push(b)
        }
        kept += todo.length - gone.length
        const r = await d.blocks.remove(gone)
        progress.removed += r.removed
        progress.freedBytes += r.freedBytes
      }, todo.map(b => b.name)).finally(() => { d.onRemoved?.(progress.removed - before.removed, progress.freedBytes - before.freed) })
    }
    for await (const page of d.blocks.list(signal)) {
      for (const b of page) {
        signal?.throwIfAborted()
        progress.scanned++
        if (marked.has(b.name) || held.has(b.name)) { kept++; continue }
        batch.push(b)
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

/**
 * Deletes these blocks unless something holds them: a pin (read under the
 * commit lock held exclusively, as a sweep batch reads it), a settlement note,
 * or an upload in flight. What a failed upload with a ticket wrote goes this
 * way at once, rather than waiting for the next gc (ticket-upload.ts).
 */
export async function removeUnreferenced (d: Pick<GcDeps, 'pins' | 'blocks' | 'lock' | 'held' | 'inFlight' | 'onRemoved'>, blocks: Array<{ cid: CID, bytes: number }>): Promise<{ removed: number, freedBytes: number }> {
  if (blocks.length === 0) return { removed: 0, freedBytes: 0 }
  const held = new Set<string>()
  for (const c of await d.held?.() ?? []) held.add(nameOf(c))
  const r = await d.lock.exclusive(async (marked) => {
    const gone = new Map<string, StoredBlock>()
    for (const b of blocks) {
      const name = blockName(b.cid)
      if (held.has(name) || marked.has(name) || d.inFlight?.has(name) === true || await referencedNow(d.pins, name)) continue
      gone.set(name, { name, size: b.bytes })
    }
    return await d.blocks.remove([...gone.values()])
  }, blocks.map(b => blockName(b.cid)))
  d.onRemoved?.(r.removed, r.freedBytes)
  return r
}

/** Marks pins expired whose pinned_until is at or before `cutoff`; returns how many (would be) swept. */
export async function sweepExpired (pins: Pick<PinLedger, 'expiredBy' | 'remove'>, cutoff: Date, dryRun = false, signal?: AbortSignal): Promise<number> {
  const ids: string[] = []
  for await (const id of pins.expiredBy(cutoff)) ids.push(id)
  if (dryRun) return ids.length
  let n = 0
  for (const id of ids) {
    signal?.throwIfAborted()
    if (await pins.remove(id, 'expired') != null) n++
  }
  return n
}

/**
 * Does a pin reference this block now? Read inside the exclusive lock, where
 * every commit that held it shared has finished and its transaction is
 * visible. The mark and protectedNow alone miss one case: a transaction
 * whose body ran (its watchers fired) before gc started watching, and whose
 * commit landed after the mark read the ledger — lmdb runs a transaction's
 * body first and commits it later, off the main thread. The soak caught it:
 * a pin fetched while gc marked lost all four of its blocks.
 * Blocks are named by multihash; a pin references one as a CID of one of
 * the codecs pins are walked with.
 */
async function referencedNow (pins: Pick<PinLedger, 'refCount'>, name: string): Promise<boolean> {
  let digest
  try {
    digest = Digest.decode(base32upper.decode(name))
  } catch {
    return false
  }
  const mh = digest
  for (const c of PIN_CODECS) if (await pins.refCount(CID.createV1(c.code, mh)) > 0) return true
  return false
}

/** The name a block CID is stored under (its multihash). */
function nameOf (cid: string): string {
  return blockName(CID.parse(cid))
}
