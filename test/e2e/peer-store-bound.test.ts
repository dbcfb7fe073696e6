/**
 * Issue 13, finding 16: unauthenticated peers grew the ledger — 200 fresh
 * libp2p peer IDs connecting to pind added ~4.2 KB each to ledger.mdb (every
 * identified peer became a persisted peer-store record, never removed). The
 * attack again: many fresh peer IDs connect, identify, and go.
 */
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { identify } from '@libp2p/identify'
import { noise } from '@libp2p/noise'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDhtNetwork, type DhtNetwork } from '../../scripts/dht-net/index.mjs'
import { openLedgerEnv } from '../../src/ledger/lmdb/open.js'
import { startPind } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

const FRESH_PEERS = 200
/** the attack comes from one address: lift the per-address inbound rate so that all 200 get in quickly */
const RATE = ['--p2p-inbound-rate', '10000']

/** `n` peers with fresh identities connect to `addr`, complete identify both ways, and disconnect. */
async function freshPeersConnect (addr: string, n: number): Promise<void> {
  const target = multiaddr(addr)
  for (let i = 0; i < n; i += 25) {
    await Promise.all(Array.from({ length: Math.min(25, n - i) }, async () => {
      const node = await createLibp2p({ transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()], services: { identify: identify() } })
      try {
        const identified = new Promise(resolve => node.addEventListener('peer:identify', resolve, { once: true }))
        await node.dial(target)
        await identified
        // pind identifies us at the same time: give its side a moment to store what it learned
        await new Promise(resolve => setTimeout(resolve, 200))
      } finally {
        await node.stop()
      }
    }))
  }
}

async function persistedPeers (dataDir: string): Promise<number> {
  const env = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
  try {
    let n = 0
    for (const { key } of env.datastore.getRange({ start: '/peers/' })) {
      if (!key.startsWith('/peers/')) break
      n++
    }
    return n
  } finally {
    await env.close()
  }
}

let net: DhtNetwork

beforeAll(async () => {
  net = await startDhtNetwork({ nodes: 3 })
})

afterAll(async () => {
  await net?.stop()
})

describe('fresh peer IDs connecting to pind', () => {
  it('leave nothing in the ledger by default (--routing none)', async () => {
    const pind = await startPind({ args: RATE })
    const ledger = join(pind.dataDir, 'ledger.mdb')
    const sizeBefore = statSync(ledger).size
    await freshPeersConnect(pind.multiaddrs[0] as string, FRESH_PEERS)
    expect(await pind.stop()).toBe(0)
    expect(await persistedPeers(pind.dataDir)).toBe(0)
    // the report: ~4.2 KB each, 840 KB for 200
    expect(statSync(ledger).size - sizeBefore).toBeLessThan(64 * 1024)
  })

  it('with --routing dht, only the DHT peers stay in the persisted peer store; fresh untagged ones are pruned once gone', async () => {
    const pind = await startPind({ args: [...RATE, '--routing', 'dht', '--bootstrap', net.addrs(2).join(','), '--routing-private-addresses'] })
    await freshPeersConnect(pind.multiaddrs[0] as string, FRESH_PEERS / 4)
    // pruned a few seconds after they disconnect (the DHT nodes and pind's own record stay)
    await waitFor(async () => {
      const r = await fetch(`${pind.url}/health`)
      return r.ok ? true : undefined
    }, 'pind to stay healthy')
    await new Promise(resolve => setTimeout(resolve, 7000))
    expect(await pind.stop()).toBe(0)
    expect(await persistedPeers(pind.dataDir)).toBeLessThanOrEqual(net.nodes.length + 1)
  })
})
