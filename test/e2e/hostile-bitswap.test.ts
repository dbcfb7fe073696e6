/**
 * Issue 13, finding 9: after DELETE the gateway answered 404, but any libp2p
 * peer could still fetch the blocks over bitswap until gc. The real server
 * (bundle) on a real chain, and real second nodes (scripts/peer) that dial it
 * and want the blocks: bitswap must follow the gateway's policy (only blocks
 * of live pins), and with --gateway-policy blockstore serve what is held.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let pinned: PindProcess
const peers: Peer[] = []

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  const { args, env } = chainArgs(chain)
  pinned = await startPind({ args, env })
})

afterAll(async () => {
  for (const p of peers) await p.stop().catch(() => {})
  await pinned?.stop()
  await chain?.stop()
})

async function upload (pind: PindProcess, bytes: Buffer): Promise<{ cid: string, requestid: string, token: string }> {
  const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
  expect(r.status).toBe(201)
  const body = await r.json() as any
  return { cid: body.cid, requestid: body.requestid, token: r.headers.get('x-wallet-auth-token') as string }
}

/** A fresh node (empty blockstore) that dials `pind` and wants `cid` over bitswap. */
async function fetchOverBitswap (pind: PindProcess, cid: string, ms: number): Promise<Buffer> {
  const peer = await startPeer()
  peers.push(peer)
  await peer.dial(pind.multiaddrs[0] as string)
  return await peer.cat(cid, AbortSignal.timeout(ms))
}

describe('bitswap after DELETE', () => {
  it('a peer gets a live pin\'s blocks, and nothing once the pin is deleted (gateway 404, bitswap nothing)', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17) // four blocks and a root
    const u = await upload(pinned, bytes)
    expect((await fetchOverBitswap(pinned, u.cid, 30_000)).equals(bytes)).toBe(true)

    const del = await fetch(`${pinned.url}/pins/${u.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${u.token}` } })
    expect(del.status).toBe(202)
    expect((await fetch(`${pinned.url}/ipfs/${u.cid}`)).status).toBe(404)
    // the blocks are still on disk (no gc yet): a fresh peer must not get them
    await expect(fetchOverBitswap(pinned, u.cid, 4_000)).rejects.toThrow()
  })

  it('with --gateway-policy blockstore, bitswap serves what is held, as the gateway does', async () => {
    const { args, env } = chainArgs(chain)
    const open = await startPind({ args: [...args, '--gateway-policy', 'blockstore'], env })
    const bytes = randomBytes(200_000)
    const u = await upload(open, bytes)
    const del = await fetch(`${open.url}/pins/${u.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${u.token}` } })
    expect(del.status).toBe(202)
    expect((await fetch(`${open.url}/ipfs/${u.cid}`)).status).toBe(200)
    expect((await fetchOverBitswap(open, u.cid, 30_000)).equals(bytes)).toBe(true)
    await open.stop()
  })
})
