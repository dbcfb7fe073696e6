/**
 * The gateway's explicit network option: with --gateway-network-timeout,
 * content this node does not hold is fetched per block from connected
 * peers (a separate Helia node dialled with --p2p-peers) and served, not
 * stored; a CID nobody has answers 404 once the timeout passes. Without the
 * option the same request is a fast 404 (no network).
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { diskBlocks } from '../helpers/backend.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

let origin: Peer
let open: PindProcess
let closed: PindProcess

beforeAll(async () => {
  origin = await startPeer()
  const peers = ['--p2p-peers', origin.multiaddrs()[0] as string]
  open = await startPind({ args: [...peers, '--gateway-network-timeout', '2s'] })
  closed = await startPind({ args: peers })
  await waitFor(() => origin.helia.libp2p.getConnections().length >= 2 ? true : undefined, 'both pinds to connect to the origin')
})

afterAll(async () => {
  await open?.stop()
  await closed?.stop()
  await origin?.stop()
})

describe('gateway network read-through', () => {
  it('serves content held by a connected peer, without storing it, only when the operator opts in', async () => {
    const { cid, bytes } = await origin.addRandom(2 * 1024 * 1024 + 17)
    const r = await fetch(`${open.url}/ipfs/${cid}`)
    expect(r.status).toBe(200)
    expect(Buffer.from(await r.arrayBuffer()).equals(bytes)).toBe(true)
    expect(diskBlocks(join(open.dataDir, 'blocks'))).toBe(0)

    const t0 = Date.now()
    expect((await fetch(`${closed.url}/ipfs/${cid}`)).status).toBe(404)
    expect(Date.now() - t0).toBeLessThan(1000)
  })

  it('gives up on a CID nobody has after the timeout', async () => {
    const t0 = Date.now()
    const r = await fetch(`${open.url}/ipfs/bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba`)
    expect(r.status).toBe(404)
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1900)
    expect((await r.json() as any).error.reason).toBe('NOT_FOUND')
  })
})
