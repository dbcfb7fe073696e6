/**
 * Moving a data dir's blocks from disk into an S3 bucket (`pind blocks
 * migrate --to s3`), on a stopped node or under a running serve.
 *
 * Every block on disk is hash-checked against its name, PUT, read back from
 * the bucket (GetObject, past any cache) and hash-checked again; only then
 * is it written to the journal (<data-dir>/blocks-migrate.journal, one name
 * per line, fsync'd in batches). An interrupted run (Ctrl-C, a crash, the
 * bucket going away) loses at most the last batch: the next run skips what
 * the journal holds and goes on. A journal made for another bucket or prefix
 * is started over.
 *
 * The bulk of the copy runs while commits go on. Then, holding the commit
 * lock exclusively (a commit waits, none is half done), the blocks committed
 * meanwhile are copied and verified the same way, and `switchOver` runs: it
 * records the bucket as the data dir's block store (and, under a running
 * serve, switches the live backend). Nothing is switched unless every block
 * on disk is in the bucket and verified; a block on disk that does not match
 * its hash stops the migration (it names them) instead of being carried over.
 */
import { PindError } from '../kernel/errors.js'
import { createHash } from 'node:crypto'
import { open, readFile, rm } from 'node:fs/promises'
import { base32upper } from 'multiformats/bases/base32'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { CorruptBlockError } from './block-backend.js'
import type { CommitLock } from './commit-lock.js'
import { eachLimited, type FsBackend } from './fs-backend.js'
import type { S3Backend } from './s3-backend.js'
import { S3_TUNING } from './s3-settings.js'

const JOURNAL = 'pind-blocks-migrate'
/** names written to the journal between fsyncs (a block costs two round trips: the fsync is cheap beside them) */
const JOURNAL_BATCH = 64
const RAW = 0x55
const HASHES: Record<number, string> = { 0x12: 'sha256', 0x13: 'sha512' }

export interface MigrateProgress {
  phase: 'copy' | 'final' | 'switch'
  /** blocks seen on disk so far */
  scanned: number
  /** copied and verified in this run */
  copied: number
  /** verified by an earlier run (in the journal) */
  resumed: number
  bytes: number
}

export interface MigrateResult {
  blocks: number
  copied: number
  resumed: number
  bytes: number
  seconds: number
  /** blocks the ledger references that were not on disk (lost before the migration) */
  missingReferenced: number
}

/** A migration that cannot go on as things stand (an admin answer: 409, src/http/error-catalog.ts). */
export class MigrateError extends PindError {
  override name = 'MigrateError'
}

export interface MigrateOptions {
  source: FsBackend
  target: S3Backend
  journalPath: string
  /** names the target (endpoint, bucket, prefix): a journal of another target is started over */
  targetId: string
  lock: CommitLock
  /** under the exclusive commit lock, once every block is in the bucket and verified */
  switchOver: () => Promise<void>
  /** CIDs the ledger references (checked against what was found on disk) */
  referenced?: () => AsyncIterable<string>
  onProgress?: (p: MigrateProgress) => void
  signal?: AbortSignal
}

export function cidOfName (name: string): CID {
  return CID.createV1(RAW, Digest.decode(base32upper.decode(name)))
}

export function matchesHash (cid: CID, bytes: Uint8Array): boolean {
  const algorithm = HASHES[cid.multihash.code]
  if (algorithm == null) return false
  return createHash(algorithm).update(bytes).digest().equals(cid.multihash.digest)
}

export async function migrateBlocks (o: MigrateOptions): Promise<MigrateResult> {
  const t0 = performance.now()
  const done = await loadJournal(o.journalPath, o.targetId)
  const progress: MigrateProgress = { phase: 'copy', scanned: 0, copied: 0, resumed: 0, bytes: 0 }
  const journal = await open(o.journalPath, 'a', 0o600)
  if (done.size === 0) await journal.truncate(0).then(async () => { await journal.write(JSON.stringify({ journal: JOURNAL, target: o.targetId }) + '\n') })
  let unsynced: string[] = []
  const flush = async (): Promise<void> => {
    if (unsynced.length === 0) return
    const lines = unsynced.join('\n') + '\n'
    unsynced = []
    await journal.write(lines)
    await journal.datasync()
  }
  const corrupt: string[] = []
  const onDisk = new Set<string>()

  // `resumed`: blocks an earlier run verified (the first pass meets every block there is then)
  const pass = async (first: boolean): Promise<void> => {
    for await (const page of o.source.list(o.signal)) {
      const todo = page.filter(b => {
        progress.scanned++
        onDisk.add(b.name)
        if (!done.has(b.name)) return true
        if (first) progress.resumed++
        return false
      })
      await eachLimited(todo, async (b) => {
        o.signal?.throwIfAborted()
        const copied = await copyOne(o, b.name)
        if (copied === 'corrupt') { corrupt.push(b.name); return }
        if (copied === 'gone') return // deleted by gc meanwhile: nothing to carry over
        done.add(b.name)
        progress.copied++
        progress.bytes += copied
        unsynced.push(b.name)
        if (unsynced.length >= JOURNAL_BATCH) await flush()
      }, S3_TUNING.concurrency)
      o.onProgress?.(progress)
    }
    await flush()
  }

  try {
    await pass(true)
    if (corrupt.length > 0) throw corruptError(corrupt)
    await o.lock.exclusive(async () => {
      // commits made while the bulk was copied: copy them too, with no commit running
      progress.phase = 'final'
      progress.scanned = 0
      onDisk.clear()
      await pass(false)
      if (corrupt.length > 0) throw corruptError(corrupt)
      o.signal?.throwIfAborted()
      progress.phase = 'switch'
      o.onProgress?.(progress)
      await o.switchOver()
    })
  } finally {
    await flush().catch(() => {})
    await journal.close()
  }
  let missingReferenced = 0
  for await (const cid of o.referenced?.() ?? []) {
    let name: string
    try { name = base32upper.encode(CID.parse(cid).multihash.bytes) } catch { continue }
    if (!onDisk.has(name)) missingReferenced++
  }
  await rm(o.journalPath, { force: true })
  return { blocks: progress.scanned, copied: progress.copied, resumed: progress.resumed, bytes: progress.bytes, seconds: (performance.now() - t0) / 1000, missingReferenced }
}

/** disk → bucket → back, hash-checked both times; the block's size, or why not */
async function copyOne (o: MigrateOptions, name: string): Promise<number | 'corrupt' | 'gone'> {
  const cid = cidOfName(name)
  const bytes = await o.source.read(cid)
  if (bytes == null) return 'gone'
  if (!matchesHash(cid, bytes)) return 'corrupt'
  await o.target.write(cid, bytes, o.signal)
  // readFromBucket checks the hash itself (CorruptBlockError); checked here again all the same
  const back = await o.target.readFromBucket(name, o.signal).catch((err: unknown) => { if (err instanceof CorruptBlockError) return undefined; throw err })
  if (back == null || !matchesHash(cid, back)) throw new MigrateError(`block ${name} did not read back from the bucket as written; nothing was switched, run the migration again`)
  return bytes.byteLength
}

function corruptError (names: string[]): MigrateError {
  return new MigrateError(`${names.length} block file(s) on disk do not match their hash (or use a hash this migration cannot check), e.g. ${names.slice(0, 5).join(', ')}; nothing was switched. Remove them (blocks/<last two characters>/<name>.data) and run pind gc and the migration again`)
}

async function loadJournal (path: string, targetId: string): Promise<Set<string>> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Set()
    throw err
  }
  const lines = text.split('\n')
  let header: { journal?: string, target?: string } | undefined
  try { header = JSON.parse(lines[0] ?? '') } catch {}
  if (header?.journal !== JOURNAL || header.target !== targetId) return new Set()
  // a torn last line (a crash mid-write) is not a name: it is copied again
  const names = lines.slice(1).filter(l => /^B[A-Z2-7]+$/.test(l))
  if (!text.endsWith('\n') && names.length > 0 && names[names.length - 1] === lines[lines.length - 1]) names.pop()
  return new Set(names)
}
