/**
 * Issue 33, item 3: each peer's share of a pind DHT server's record budget
 * (routing/datastore.ts).
 */
import { MemoryDatastore } from 'datastore-core'
import { Key } from 'interface-datastore'
import { describe, expect, it } from 'vitest'
import { Libp2pDatastore } from '../../../src/ipfs/routing/datastore.js'

describe('Libp2pDatastore, as a DHT server\'s record store', () => {
  it('gives each peer a share of the records: past it its new ones are dropped, its renewals are not', async () => {
    const base = new MemoryDatastore()
    const key = (mh: number, peer: string): Key => new Key(`/dht/provider/mh${mh}/${peer}`)
    await base.put(key(0, 'A'), Uint8Array.of(1))
    const ds = await Libp2pDatastore.open(base, { persistPeers: false, maxRecords: 10, maxRecordsPerPeer: 3 })
    expect(ds.recordsOf('A')).toBe(1)
    for (let i = 1; i < 5; i++) await ds.put(key(i, 'A'), Uint8Array.of(1))
    expect(ds.recordsOf('A')).toBe(3)
    expect(ds.droppedPeerShare).toBe(2)
    expect(await base.has(key(3, 'A'))).toBe(false)
    // a renewal of a record it has
    await ds.put(key(0, 'A'), Uint8Array.of(2))
    expect(await base.get(key(0, 'A'))).toEqual(Uint8Array.of(2))
    // others are not affected, and a deleted record frees room
    await ds.put(key(9, 'B'), Uint8Array.of(1))
    expect(ds.recordsOf('B')).toBe(1)
    await ds.delete(key(0, 'A'))
    await ds.put(key(7, 'A'), Uint8Array.of(1))
    expect(await base.has(key(7, 'A'))).toBe(true)
    expect(ds.recordCount).toBe(4)
  })
})
