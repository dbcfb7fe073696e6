/**
 * CARs as a client that builds its own DAG makes them: the blocks a file
 * imports as (UnixFS, the importer's layout) and a CARv1 of any blocks.
 */
import { CarWriter } from '@ipld/car/writer'
import { MemoryBlockstore } from 'blockstore-core'
import type { CID } from 'multiformats/cid'
import { importFile } from '../../src/ipfs/import.js'

export interface Block { cid: CID, bytes: Uint8Array }

/** a CARv1 naming `roots` and holding `blocks` in that order */
export async function carOf (roots: CID[], blocks: Block[]): Promise<Uint8Array> {
  const { writer, out } = CarWriter.create(roots)
  const chunks: Uint8Array[] = []
  const done = (async () => { for await (const c of out) chunks.push(c) })()
  for (const b of blocks) await writer.put(b)
  await writer.close()
  await done
  return Buffer.concat(chunks)
}

/** a file's UnixFS blocks, in the order the importer puts them (copied: its buffers are reused) */
export async function dagOf (content: Uint8Array | AsyncIterable<Uint8Array>): Promise<{ root: CID, blocks: Block[] }> {
  const blocks: Block[] = []
  const store = new MemoryBlockstore()
  const recording = { put: async (cid: CID, bytes: Uint8Array) => { blocks.push({ cid, bytes: Uint8Array.from(bytes) }); return await store.put(cid, bytes) }, has: store.has.bind(store), get: store.get.bind(store) }
  const source = content instanceof Uint8Array ? (async function * () { yield content })() : content
  const { cid } = await importFile(source, { blockstore: recording, maxBytes: Number.MAX_SAFE_INTEGER })
  return { root: cid, blocks }
}
