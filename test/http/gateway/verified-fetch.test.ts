/**
 * @helia/verified-fetch as a real trustless client: its only source of blocks
 * is our gateway (as the single HTTP gateway), everything else that could
 * reach the network is switched off: no delegated routers, no libp2p
 * listeners, transports, discovery or services besides identify, and a DNS
 * resolver that refuses.
 *
 * A trustless client asks for every block by its own CID (/ipfs/{block}?format=raw),
 * with no hint of the root it belongs to, so a policy that only admits pinned
 * ROOT CIDs would 404 every child block. The policy here is "anything local".
 */
import { identify } from '@libp2p/identify'
import { createVerifiedFetch, type VerifiedFetch } from '@helia/verified-fetch'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serve, sha, type Served } from './helpers.js'

let s: Served
let vf: VerifiedFetch

beforeAll(async () => {
  s = await serve({ isServable: () => true })
  vf = await createVerifiedFetch({
    gateways: [s.base],
    routers: [],
    allowLocal: true,
    allowInsecure: true,
    dnsResolvers: [async () => { throw new Error('no DNS in tests') }],
    libp2pConfig: {
      addresses: { listen: [] },
      transports: [],
      peerDiscovery: [],
      services: { identify: identify() }
    }
  })
}, 60_000)

afterAll(async () => {
  await vf?.stop()
  await s?.close()
})

describe('@helia/verified-fetch against this gateway', () => {
  it('fetches and verifies a multi-block file', async () => {
    const r = await vf(`ipfs://${s.fixture.big.cid}`)
    expect(r.status).toBe(200)
    expect(sha(new Uint8Array(await r.arrayBuffer()))).toBe(sha(s.fixture.big.bytes))
  }, 60_000)

  it('fetches a file through a directory path', async () => {
    const r = await vf(`ipfs://${s.fixture.root}/nested/deep/file.txt`)
    expect(r.status).toBe(200)
    expect(await r.text()).toBe('deep inside\n')
  }, 60_000)

  it('fetches a CIDv0 file', async () => {
    const r = await vf(`ipfs://${s.fixture.v0.cid}`)
    expect(r.status).toBe(200)
    expect(sha(new Uint8Array(await r.arrayBuffer()))).toBe(sha(s.fixture.v0.bytes))
  }, 60_000)

  it('fetches through a HAMT-sharded directory', async () => {
    const r = await vf(`ipfs://${s.fixture.hamt}/f05.txt`)
    expect(r.status).toBe(200)
    expect(await r.text()).toBe('file 5\n')
  }, 60_000)
})
