/**
 * Where committed blocks live: on the local disk (fs-backend.ts, the
 * blockstore-fs layout under blocks/) or in an S3-compatible bucket
 * (s3-backend.ts). Nothing outside src/ipfs/ knows either layout: Helia,
 * bitswap, the gateway, the fetcher and CAR export read through `blockstore`;
 * staging commits through `commit`; gc lists and deletes through `list` and
 * `remove`, by block name (the multihash, as both layouts name blocks).
 */
import type { Blockstore } from 'interface-blockstore'
import { base32upper } from 'multiformats/bases/base32'
import type { CID } from 'multiformats/cid'
import { UnavailableError } from '../kernel/errors.js'

export type BackendKind = 'fs' | 's3'
export const BACKEND_KINDS: readonly BackendKind[] = ['fs', 's3']

/** A stored block as a listing sees it: its name and, when the listing tells it, its size. */
export interface StoredBlock {
  name: string
  size?: number
}

/**
 * A staged block waiting for its commit: `size` bytes at `offset` in a file
 * on local disk (fdatasync'd). `whole`: the file holds this block alone (it
 * may be moved rather than copied); otherwise it is one of many in a staging
 * log (staging-log.ts).
 */
export interface StagedBlock {
  cid: CID
  path: string
  offset: number
  size: number
  whole: boolean
}

/**
 * Reusable block-sized buffers a commit may read staged files into (the
 * import's chunk pool, idle once the import is done): `take` one, `give` it
 * back once its block is stored.
 */
export interface BlockBuffers {
  readonly chunkSize: number
  take(): Uint8Array
  give(bytes: Uint8Array): void
}

export interface BlockBackend {
  readonly kind: BackendKind
  /** what Helia, bitswap, the gateway, the fetcher and CAR export read through */
  readonly blockstore: Blockstore
  /**
   * Blocks of at most this many bytes are packed many to a file (disk: small-blocks.ts), so
   * the staging keeps them in its log rather than in a file each; none packed when absent.
   */
  readonly packedMax?: number
  /**
   * Stores staged blocks durably (idempotent: the names are content
   * addresses). Call under the commit lock. Whole staged files may be moved
   * away; whatever is left is the caller's to remove. Returns the blocks
   * (and bytes) the store did not hold before, for the usage figures (S3:
   * as far as this process knows; the usage walk corrects any drift).
   */
  commit(blocks: StagedBlock[], signal?: AbortSignal, buffers?: BlockBuffers): Promise<{ added: number, addedBytes: number }>
  /**
   * Stores one block durably, now, straight from memory (an upload with a
   * prepaid ticket, or a paid one to S3: its blocks reach the store while its
   * body arrives; S3 keeps a copy in its read cache, as a commit does).
   * Idempotent. The caller registers the block in flight first
   * (in-flight-blocks.ts), so gc cannot delete it meanwhile; that is also
   * what makes skipping a block the store holds already safe. Returns
   * whether the block was new to the store (as far as this process knows).
   */
  put(cid: CID, bytes: Uint8Array, signal?: AbortSignal): Promise<boolean>
  /** readies what a later commit of these blocks needs, storing none of them (disk: their shard folders) */
  prepare?(cids: CID[]): Promise<void>
  /** a stored block's bytes, or undefined when it is not stored (any other failure throws) */
  read(cid: CID, signal?: AbortSignal): Promise<Uint8Array | undefined>
  /** every stored block, in pages of at most 1000 (gc's sweep, migration) */
  list(signal?: AbortSignal): AsyncIterable<StoredBlock[]>
  /** the size of a listed block the listing did not size (undefined: gone) */
  sizeOf(block: StoredBlock): Promise<number | undefined>
  /** deletes a batch of listed blocks; a block already gone is not an error */
  remove(blocks: StoredBlock[]): Promise<{ removed: number, freedBytes: number }>
  /** blocks and bytes held (a full listing: call rarely) */
  usage(): Promise<{ blocks: number, bytes: number }>
  /** a real write and delete (for /health); throws with a message fit for the public */
  probe(): Promise<void>
  /** false while the store is known to be unreachable: paid writes answer 503 before any payment is used */
  writable(): boolean
  /** confirms, with a round trip, that the store answers now (S3: HeadBucket); throws StorageUnavailableError or StorageTimeoutError */
  ready(): Promise<void>
  /** a short description for logs and admin output (never credentials) */
  describe(): string
  /**
   * Blocks another process sharing the store wrote or removed (front ends on one ledger and one
   * bucket): what this one remembers of them, present or absent, is dropped; none named: all of it.
   */
  forget?(cids?: CID[]): void
  close(): Promise<void>
}

/** The name a block is stored under: its multihash in base32 (blockstore-fs's file name without ".data"). */
export function blockName (cid: CID): string {
  return base32upper.encode(cid.multihash.bytes)
}

export const RETRY_AFTER_S = 10

/** The block store cannot be reached (connection refused, 5xx after retries, bucket gone, access denied). */
export class StorageUnavailableError extends UnavailableError {
  override name = 'StorageUnavailableError'
  constructor (details = 'the block storage is unreachable right now; retry shortly') {
    super(details, RETRY_AFTER_S)
  }
}

/** The block store did not answer in time (a 504 on the wire: src/http/error-catalog.ts). */
export class StorageTimeoutError extends UnavailableError {
  override name = 'StorageTimeoutError'
  constructor (details = 'the block storage did not answer in time; retry shortly') {
    super(details, RETRY_AFTER_S)
  }
}

/**
 * A block read from the store whose bytes do not hash to its CID (a damaged
 * or replaced object in the bucket): it is never served. A fault of the
 * storage, not an answer to a client (500, logged).
 */
export class CorruptBlockError extends Error {
  override name = 'CorruptBlockError'
}

/** A missing block, the way blockstore-fs reports one (content.ts matches on the name). */
export function notFound (cid: CID): Error {
  return Object.assign(new Error(`block ${cid.toString()} not found`), { name: 'NotFoundError', code: 'ERR_NOT_FOUND' })
}
