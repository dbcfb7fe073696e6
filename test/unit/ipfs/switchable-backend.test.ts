import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { blockName } from '../../../src/ipfs/block-backend.js'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { SwitchableBackend } from '../../../src/ipfs/switchable-backend.js'
import { tempDir } from '../../helpers/pind.js'

describe('SwitchableBackend', () => {
  it('counts removals once they have ended, and a switch of store as one', async () => {
    const dir = tempDir()
    const blocks = new SwitchableBackend(new FsBackend(join(dir, 'a')))
    const cids = [1, 2, 3].map(i => { const bytes = Buffer.from(`block ${i}`); return { cid: rawCid(bytes), bytes } })
    for (const { cid, bytes } of cids) await blocks.put(cid, bytes)
    expect(blocks.removals).toBe(0)
    const removing = blocks.remove([{ name: blockName(cids[0]!.cid) }])
    expect(blocks.removals).toBe(0) // under way: not yet
    await removing
    expect(blocks.removals).toBe(1)
    expect(await blocks.blockstore.has(cids[0]!.cid)).toBe(false)
    await blocks.blockstore.delete(cids[1]!.cid)
    expect(blocks.removals).toBe(2)
    for await (const _ of blocks.blockstore.deleteMany([cids[2]!.cid])) expect(blocks.removals).toBe(2)
    expect(blocks.removals).toBe(3)
    mkdirSync(join(dir, 'b'))
    blocks.switchTo(new FsBackend(join(dir, 'b')))
    expect(blocks.removals).toBe(4)
    await blocks.close()
  })
})
