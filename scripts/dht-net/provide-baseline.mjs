#!/usr/bin/env node
// The baseline of scripts/bench-reprovide.mjs, in its own process: a libp2p
// node with stock @libp2p/kad-dht joins the loopback DHT and calls
// `provide()` once per CID, `concurrency` at a time (kad-dht's own
// reprovider runs 10 at once), the way a node without a sweep announces.
// Prints one JSON line: {count, ms, errors}.
// Usage: node scripts/dht-net/provide-baseline.mjs <bootstrap,multiaddrs> <count> [concurrency=10] [seed=baseline]
import { createHash } from 'node:crypto'
import { identify } from '@libp2p/identify'
import { noise } from '@libp2p/noise'
import { ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { loopbackDht } from './index.mjs'

const [bootstrap, countArg, concArg, seed = 'baseline'] = process.argv.slice(2)
const count = Number(countArg)
const concurrency = Number(concArg ?? 10)
const node = await createLibp2p({
  addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
  transports: [tcp()],
  connectionEncrypters: [noise()],
  streamMuxers: [yamux()],
  connectionManager: { maxConnections: 1000 },
  services: { identify: identify(), ping: ping(), dht: loopbackDht({ server: false }) }
})
for (const a of bootstrap.split(',')) await node.dial(multiaddr(a))
const deadline = Date.now() + 30_000
while (node.services.dht.routingTable.size < bootstrap.split(',').length && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 50))
const cidOf = (i) => CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`${seed} ${i}`).digest()))
let next = 0
let errors = 0
const t0 = performance.now()
await Promise.all(Array.from({ length: concurrency }, async () => {
  for (let i = next++; i < count; i = next++) {
    try {
      for await (const _ of node.services.dht.provide(cidOf(i))) {}
    } catch { errors++ }
  }
}))
const ms = performance.now() - t0
process.stdout.write(JSON.stringify({ count, ms, errors, peerId: node.peerId.toString() }) + '\n')
await node.stop()
