/**
 * What one block says about its DAG: the CIDs it links to (any codec helia
 * can load: dag-pb, raw, dag-cbor, dag-json, json) and, for the root, the
 * DAG's declared size. dag-pb: block length + Σ link Tsize (UnixFS files also
 * declare their content size, which counts when it is larger: a file whose
 * links repeat one block is read as its file size); raw: the block itself.
 * Other codecs declare nothing (their bytes must still decode, or the root
 * is refused: no DAG can be walked through it). Declared sizes are claims: the fetcher
 * enforces a byte cap anyway, on the DAG expanded through repeated links too.
 */
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import type { Helia } from '@helia/interface'
import { codecOf } from './codecs.js'

export const RAW_CODE = 0x55
export const IDENTITY_HASH = 0x00

export interface DeclaredSize {
  /** bytes of all blocks of the DAG, as the root declares them */
  dagSize: number
  /** UnixFS file content size, when the root is a UnixFS file */
  fileSize?: number
  how: 'dag-pb root (block + link Tsizes)' | 'dag-pb root (the UnixFS file size it declares)' | 'raw block'
}

export function declaredSize (cid: CID, bytes: Uint8Array): DeclaredSize | undefined {
  if (cid.code === RAW_CODE) return { dagSize: bytes.byteLength, fileSize: bytes.byteLength, how: 'raw block' }
  if (cid.code !== dagPb.code) {
    // declares nothing, but must be what its codec says (throws otherwise: the DAG cannot be walked)
    codecOf(cid.code)?.decode(bytes)
    return undefined
  }
  const node = dagPb.decode(bytes)
  let dagSize = bytes.byteLength
  for (const link of node.Links) {
    if (link.Tsize == null) return undefined
    dagSize += link.Tsize
  }
  let fileSize: number | undefined
  try {
    if (node.Data != null) {
      const fs = UnixFS.unmarshal(node.Data)
      if (fs.type === 'file' || fs.type === 'raw') fileSize = Number(fs.fileSize())
    }
  } catch {}
  // a file is served as the size it declares (its blocksizes); when that is more than its
  // Tsizes add up to, the links repeat or lie, and what will be read is the file size
  if (fileSize != null && fileSize > dagSize) return { dagSize: fileSize, fileSize, how: 'dag-pb root (the UnixFS file size it declares)' }
  return { dagSize, fileSize, how: 'dag-pb root (block + link Tsizes)' }
}

/** The CIDs a block links to, in order. Identity CIDs (data inline) are left out. */
export async function linksOf (helia: Pick<Helia, 'getCodec'>, cid: CID, bytes: Uint8Array): Promise<CID[]> {
  if (cid.code === RAW_CODE) return []
  if (cid.code === dagPb.code) return dagPb.decode(bytes).Links.map(l => l.Hash).filter(c => c.multihash.code !== IDENTITY_HASH)
  const codec = await helia.getCodec(cid.code)
  return cidsIn(codec.decode(bytes)).filter(c => c.multihash.code !== IDENTITY_HASH)
}

/** The CIDs a decoded block (dag-cbor, dag-json, …) holds, in order. */
export function cidsIn (value: unknown): CID[] {
  const out: CID[] = []
  walk(value, out, 0)
  return out
}

function walk (value: unknown, out: CID[], depth: number): void {
  if (depth > 256 || value == null || typeof value !== 'object') return
  const cid = CID.asCID(value)
  if (cid != null) { out.push(cid); return }
  if (value instanceof Uint8Array) return
  for (const v of Array.isArray(value) ? value : Object.values(value)) walk(v, out, depth + 1)
}
