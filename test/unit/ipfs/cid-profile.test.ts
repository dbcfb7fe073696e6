/**
 * Files import as IPIP-499's `unixfs-v1-2025` profile (../shared/spec/ipip-0499.md):
 * CIDv1, raw leaves, 1 MiB chunks, balanced layout, 1,024 links per node, a
 * one-chunk file its raw leaf. pind's own streaming importer (src/ipfs/import.ts)
 * against ipfs-unixfs-importer's `profile: 'unixfs-v1-2025'`: the same CID for files of
 * every shape, so an agent computes the CID it will pay for before it pays.
 */
import { randomBytes } from 'node:crypto'
import { MemoryBlockstore } from 'blockstore-core'
import { importer } from 'ipfs-unixfs-importer'
import { describe, expect, it } from 'vitest'
import { importFile, UNIXFS_PROFILE } from '../../../src/ipfs/import.js'

const MiB = 1_048_576

/** the reference: ipfs-unixfs-importer's own implementation of the profile */
async function referenceCid (content: Uint8Array): Promise<string> {
  let last
  for await (const entry of importer([{ content: [content] }], new MemoryBlockstore(), { profile: UNIXFS_PROFILE })) last = entry
  return String(last?.cid)
}

async function * pieces (bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.byteLength; i += size) yield bytes.slice(i, i + size)
}

describe(`the ${UNIXFS_PROFILE} profile`, () => {
  it('gives the reference importer\'s CID for empty, tiny, one-chunk, chunk-edge and many-chunk files, however the bytes arrive', async () => {
    for (const size of [0, 1, 1000, MiB - 1, MiB, MiB + 1, 3 * MiB + 12_345]) {
      const content = randomBytes(size)
      const want = await referenceCid(content)
      for (const piece of [65_536, 999_999]) {
        const got = await importFile(size === 0 ? (async function * () {})() : pieces(content, piece), { blockstore: new MemoryBlockstore(), maxBytes: 10 * MiB })
        expect(got.cid.toString(), `${size} bytes in pieces of ${piece}`).toBe(want)
      }
    }
  })
})
