import { createHash } from 'node:crypto'
import { identify } from '@libp2p/identify'
import { noise } from '@libp2p/noise'
import { ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { createLibp2p } from 'libp2p'
import { lpStream } from '@libp2p/utils'
import { writer } from 'protons-runtime'
import { startDhtNetwork, loopbackDht } from './index.mjs'
const net = await startDhtNetwork({ nodes: 2 })
const node = await createLibp2p({ addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] }, transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()], services: { identify: identify(), ping: ping(), dht: loopbackDht({ server: false }) } })
const server = net.nodes[0].libp2p
await node.dial(server.getMultiaddrs()[0])
const peer = writer(); peer.uint32(10).bytes(node.peerId.toMultihash().bytes); for (const a of node.getMultiaddrs()) peer.uint32(18).bytes(a.decapsulateCode(421).bytes)
const prov = writer().uint32(74).bytes(peer.finish()).finish()
const N = Number(process.argv[2] ?? 2000)
const msgs = Array.from({ length: N }, (_, i) => { const mh = Buffer.concat([Buffer.from([0x12, 0x20]), createHash('sha256').update('m' + i).digest()]); const w = writer(); w.uint32(8).int32(2); w.uint32(18).bytes(mh); const h = w.finish(); return Buffer.concat([h, prov]) })
const t0 = performance.now()
const stream = await node.dialProtocol(server.peerId, '/ipfs/kad/1.0.0')
const lp = lpStream(stream)
for (let i = 0; i < N; i += 64) await lp.writeV(msgs.slice(i, i + 64))
await lp.write(writer().uint32(8).int32(5).finish())
await lp.read()
await stream.close()
console.log(N, 'records', (performance.now() - t0).toFixed(0), 'ms')
await node.stop(); await net.stop()
