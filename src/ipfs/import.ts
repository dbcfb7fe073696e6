/**
 * Streaming UnixFS import with a byte cap enforced on the bytes actually
 * received. Layout (documented in the README): CIDv1, raw leaves, fixed-size
 * 1 MiB chunks, balanced DAG of up to 1024 links per node; a file of one chunk
 * is a single raw block.
 */
import { unixfs } from '@helia/unixfs'
import type { Blockstore } from 'interface-blockstore'
import type { CID } from 'multiformats/cid'
import type { Chunker } from './chunk-pool.js'

export const CHUNK_SIZE = 1_048_576

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
    ...(opts.chunker != null ? { chunker: opts.chunker } : {}),
    signal: opts.signal
  })
  return { cid, fileSize }
}
