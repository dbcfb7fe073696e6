/**
 * Streaming UnixFS import with a byte cap enforced on the bytes actually
 * received. Layout (documented in the README): IPIP-499's `unixfs-v1-2025`
 * profile for files: CIDv1, raw leaves, fixed-size 1 MiB chunks, balanced
 * DAG of up to 1024 links per node; a file of one chunk is a single raw block
 * (test/unit/ipfs/cid-profile.test.ts holds it to the reference importer).
 */
import { unixfs, type AddOptions } from '@helia/unixfs'
import type { Blockstore } from 'interface-blockstore'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import type { Chunker } from './chunk-pool.js'
import { Window } from './window.js'

export const CHUNK_SIZE = 1_048_576
/** the CID profile files are imported with (IPIP-499), as the agent card and the OpenAPI document name it */
export const UNIXFS_PROFILE = 'unixfs-v1-2025'
/**
 * Leaves being written at once, per import. Each holds a 1 MiB chunk buffer,
 * so this is what one upload keeps in memory (plus the chunk being filled);
 * four writes in flight, started as each leaf is cut (see eagerRawLeaves),
 * keep a write + fdatasync pipeline busy (docs/internals.md, import.ts).
 */
export const LEAF_WRITES = 4
/**
 * Leaf writes beyond each import's first, across all imports at once. Every
 * import always has one leaf being written (so none waits on another); its
 * further LEAF_WRITES - 1 take a share of this process-wide budget, or wait
 * for one, which holds the upload's body back (TCP backpressure), so memory
 * does not grow with the number of concurrent uploads. Eight keeps two
 * uploads at the full pipeline; past that the disk is the limit.
 */
export const SHARED_LEAF_WRITES = 8

export class TooLargeError extends Error {
  override name = 'TooLargeError'
  constructor (readonly limit: number) {
    super(`more than ${limit} bytes`)
  }
}

/** what an import writes to (the importer only puts; unixfs asks for get and has too) */
export type ImportTarget = Pick<Blockstore, 'get' | 'put' | 'has'>

export interface ImportResult {
  cid: CID
  /** bytes of file content */
  fileSize: number
}

export async function importFile (source: AsyncIterable<Uint8Array>, opts: { blockstore: ImportTarget, maxBytes: number, signal?: AbortSignal, chunker?: Chunker }): Promise<ImportResult> {
  let fileSize = 0
  async function * capped (): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      fileSize += chunk.byteLength
      if (fileSize > opts.maxBytes) throw new TooLargeError(opts.maxBytes)
      yield chunk
    }
  }
  const fs = unixfs({ blockstore: opts.blockstore })
  const cid = await fs.addByteStream(capped(), {
    cidVersion: 1,
    rawLeaves: true,
    reduceSingleLeafToSelf: true,
    blockWriteConcurrency: LEAF_WRITES,
    bufferImporter: eagerRawLeaves(),
    ...(opts.chunker != null ? { chunker: opts.chunker } : {}),
    signal: opts.signal
  })
  return { cid, fileSize }
}

/**
 * The importer's raw-leaf writer (CIDv1, raw codec, sha2-256: the same CIDs),
 * except that each leaf's write starts as soon as the leaf is cut; the
 * importer's own waits for a whole batch of chunks, so reading the body and
 * writing the blocks would take turns.
 */
function eagerRawLeaves (): NonNullable<AddOptions['bufferImporter']> {
  return async function * (file, blockstore) {
    let inFlight = 0
    for await (const block of file.content) {
      const shared = inFlight > 0
      if (shared) await sharedLeafWrites.take()
      inFlight++
      const written = (async () => {
        try {
          // the size is taken first: once written, a pooled buffer may be freed (chunk-pool.ts)
          const size = BigInt(block.byteLength)
          const cid = CID.createV1(raw.code, await sha256.digest(block))
          await blockstore.put(cid, block)
          return { cid, size, block }
        } finally {
          inFlight--
          if (shared) sharedLeafWrites.give()
        }
      })()
      // the importer awaits each write in order; this only keeps a failure it has not reached yet from being unhandled
      written.catch(() => {})
      yield async () => await written
    }
  }
}

/** SHARED_LEAF_WRITES, handed out first come, first served */
const sharedLeafWrites = new Window(SHARED_LEAF_WRITES)
