/**
 * src/ipfs/directory-import.ts without HTTP: the byte cap counts every file,
 * the file count is capped, and a form with no file is refused.
 */
import { MemoryBlockstore } from 'blockstore-core'
import { describe, expect, it } from 'vitest'
import { importDirectory } from '../../../src/ipfs/directory-import.js'
import { TooLargeError } from '../../../src/ipfs/import.js'

async function * filesOf (entries: Array<[string, number]>): AsyncGenerator<{ path: string, bytes: AsyncIterable<Uint8Array> }> {
  for (const [path, size] of entries) yield { path, bytes: (async function * () { yield new Uint8Array(size).fill(1) })() }
}

const refusal = async (entries: Array<[string, number]>, o: { maxBytes: number, maxFiles?: number }): Promise<Error | undefined> =>
  await importDirectory(filesOf(entries), { blockstore: new MemoryBlockstore(), ...o }).then(() => undefined, (err: Error) => err)

describe('importDirectory', () => {
  it('caps the bytes of all files together and the number of files; refuses an empty directory', async () => {
    const ok = await importDirectory(filesOf([['a', 600], ['b/c', 400]]), { blockstore: new MemoryBlockstore(), maxBytes: 1000 })
    expect(ok.fileSize).toBe(1000)
    expect(ok.files.map(f => [f.path, f.size])).toEqual([['a', 600], ['b/c', 400]])
    expect(await refusal([['a', 600], ['b/c', 401]], { maxBytes: 1000 })).toBeInstanceOf(TooLargeError)
    expect((await refusal([['a', 1], ['b', 1], ['c', 1]], { maxBytes: 1000, maxFiles: 2 }))?.message).toBe('more than 2 files: at most 2 per directory upload')
    expect((await refusal([], { maxBytes: 1000 }))?.message).toMatch(/needs at least one file part/)
  })
})
