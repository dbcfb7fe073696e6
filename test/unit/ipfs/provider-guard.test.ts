/**
 * Issue 33, item 3: what ADD_PROVIDER may store at a pind DHT server — the
 * guard's address policy, caps and rate (provider-guard.ts). Each peer's
 * share of the records: dht-records.test.ts; the attack end to end:
 * test/e2e/hostile-dht-providers.test.ts.
 */
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import { describe, expect, it } from 'vitest'
import { MAX_ADDRS_PER_MESSAGE, MAX_ADDRS_PER_PEER, MAX_INBOUND_MESSAGE_BYTES, ProviderGuard, RATE_BURST, RATE_PER_SECOND } from '../../../src/ipfs/routing/provider-guard.js'

const bytes = (a: string): Uint8Array => multiaddr(a).bytes
const tcp = (i: number): Uint8Array => bytes(`/ip4/8.8.${Math.floor(i / 250) % 250}.${1 + i % 250}/tcp/4001`)

describe('ProviderGuard', () => {
  it('keeps only addresses the routing would dial: TCP over IPv4/IPv6, public unless private addresses are allowed', () => {
    const pub = new ProviderGuard({ allowPrivate: false })
    const lan = new ProviderGuard({ allowPrivate: true })
    const cases: Array<[string, boolean, boolean]> = [
      ['/ip4/8.8.8.8/tcp/4001', true, true],
      ['/ip6/2001:4860::8888/tcp/4001/p2p/12D3KooWDxq469jidMYLK8xnsMxeWAyp4AvrxRamrUnJoMi5nk6q', true, true],
      ['/ip4/127.0.0.1/tcp/4001', false, true],
      ['/ip4/192.168.1.2/tcp/4001', false, true],
      ['/dns4/example.com/tcp/4001', false, true],
      ['/ip4/8.8.8.8/tcp/4001/ws', false, false],
      ['/ip4/8.8.8.8/udp/4001/quic-v1', false, false],
      ['/ip4/8.8.8.8/udp/4001/webrtc-direct', false, false],
      ['/ip4/8.8.8.8/tcp/4001/p2p/12D3KooWDxq469jidMYLK8xnsMxeWAyp4AvrxRamrUnJoMi5nk6q/p2p-circuit', false, false]
    ]
    for (const [a, publicOk, privateOk] of cases) {
      expect(pub.dialable(multiaddr(a)), a).toBe(publicOk)
      expect(lan.dialable(multiaddr(a)), a).toBe(privateOk)
    }
  })

  it('looks at the first addresses of a message only, and brings a peer to 16 stored at most', () => {
    const g = new ProviderGuard({ allowPrivate: false })
    const raw = Array.from({ length: 1000 }, (_, i) => tcp(i))
    const kept = g.select(raw, new Set())
    expect(kept.fresh).toHaveLength(MAX_ADDRS_PER_PEER)
    expect(kept.again).toEqual([])
    expect(g.addressesDropped).toBe(1000 - MAX_ADDRS_PER_PEER)
    // past the message's cap nothing is looked at: a dialable address there is not kept
    const late = [...Array.from({ length: MAX_ADDRS_PER_MESSAGE }, () => bytes('/ip4/8.8.8.8/udp/1/quic-v1')), tcp(5000)]
    expect(g.select(late, new Set())).toEqual({ again: [], fresh: [] })
    // a peer with 10 stored: its stored ones named again, and 6 new
    const stored = new Set(Array.from({ length: 10 }, (_, i) => multiaddr(tcp(i)).toString()))
    const again = g.select(Array.from({ length: 30 }, (_, i) => tcp(i)), stored)
    expect(again.again).toHaveLength(10)
    expect(again.fresh).toHaveLength(MAX_ADDRS_PER_PEER - 10)
  })

  it('admits a burst of messages per peer, then its rate', async () => {
    let now = 0
    const g = new ProviderGuard({ allowPrivate: false, now: () => now })
    const a = peerIdFromPrivateKey(await generateKeyPair('Ed25519'))
    const b = peerIdFromPrivateKey(await generateKeyPair('Ed25519'))
    for (let i = 0; i < RATE_BURST; i++) expect(g.admit(a)).toBe(true)
    expect(g.admit(a)).toBe(false)
    expect(g.admit(b)).toBe(true)
    now += 1000
    let admitted = 0
    while (g.admit(a)) admitted++
    expect(admitted).toBe(RATE_PER_SECOND)
    expect(g.refused).toBe(2)
  })

  it('cuts an inbound DHT stream as soon as a message longer than 16 KiB is announced, wherever the chunks split', () => {
    const varint = (n: number): number[] => { const out: number[] = []; while (n >= 0x80) { out.push((n & 0x7f) | 0x80); n = Math.floor(n / 128) } out.push(n); return out }
    const run = (chunks: Uint8Array[]): { aborted: boolean, seen: number } => {
      const stream = new EventTarget() as EventTarget & { abort: (err: Error) => void, aborted: boolean }
      stream.aborted = false
      stream.abort = () => { stream.aborted = true }
      let seen = 0
      stream.addEventListener('message', () => { seen++ })
      const g = new ProviderGuard({ allowPrivate: false })
      void g.inbound(() => {})(stream as any, {} as any)
      for (const c of chunks) {
        const evt = new Event('message') as Event & { data: Uint8Array }
        evt.data = c
        stream.dispatchEvent(evt)
      }
      return { aborted: stream.aborted, seen }
    }
    const frame = (n: number): number[] => [...varint(n), ...new Array(n).fill(7)]
    // two small messages and the start of a third at the limit, split anywhere: fine
    const ok = Uint8Array.from([...frame(300), ...frame(5), ...frame(MAX_INBOUND_MESSAGE_BYTES)])
    for (const cut of [1, 2, 301, 303, 310]) expect(run([ok.subarray(0, cut), ok.subarray(cut)]).aborted, String(cut)).toBe(false)
    // one byte more, its length's varint split across chunks
    const big = Uint8Array.from([...frame(10), ...varint(MAX_INBOUND_MESSAGE_BYTES + 1)])
    expect(run([big.subarray(0, 12), big.subarray(12)]).aborted).toBe(true)
    expect(run([Uint8Array.from(varint(4_000_000))]).aborted).toBe(true)
  })
})
