// A separate IPFS peer for tests and benchmarks: its own Helia + libp2p
// instance (TCP on loopback, bitswap), an on-disk blockstore in its own
// folder, and nothing else — no bootstrap, DHT or discovery. It plays the
// "origin" that holds content pind is asked to pin, and the third node that
// fetches pinned content back from pind. With `dht` it also joins a loopback
// DHT (scripts/dht-net): it announces what it adds, and — a "stranger" —
// finds and fetches content by CID through the DHT like any IPFS node.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createHash, randomBytes } from 'node:crypto'
import { withBitswap } from '@helia/bitswap'
import { withLibp2pLight } from '@helia/libp2p'
import { unixfs } from '@helia/unixfs'
import * as dagPb from '@ipld/dag-pb'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { identify } from '@libp2p/identify'
import { ping } from '@libp2p/ping'
import { bootstrap } from '@libp2p/bootstrap'
import { noise } from '@libp2p/noise'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { FsBlockstore } from 'blockstore-fs'
import { MemoryDatastore } from 'datastore-core'
import { createHeliaLight } from 'helia'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { loopbackDht } from '../dht-net/index.mjs'

const RAW = 0x55
const SHA256 = 0x12

/** Raw-block CID of some bytes (sha2-256, CIDv1). */
export function rawCid (bytes) {
  return CID.createV1(RAW, Digest.create(SHA256, createHash('sha256').update(bytes).digest()))
}

export async function startPeer (opts = {}) {
  const dir = opts.blocksDir ?? mkdtempSync(join(tmpdir(), 'pind-peer-'))
  const blockstore = new FsBlockstore(dir)
  await blockstore.open()
  let reads = 0
  if (opts.readDelayMs > 0) {
    const get = blockstore.get.bind(blockstore)
    blockstore.get = async function * (cid, options) {
      reads++
      await new Promise(resolve => setTimeout(resolve, opts.readDelayMs))
      yield * get(cid, options)
    }
  }
  const privateKey = opts.privateKey ?? await generateKeyPair('Ed25519')
  const helia = withBitswap(withLibp2pLight(createHeliaLight({ blockstore, datastore: new MemoryDatastore() }), {
    privateKey,
    addresses: { listen: [`/ip4/127.0.0.1/tcp/${opts.port ?? 0}`] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    peerDiscovery: opts.dht?.bootstrap?.length > 0 ? [bootstrap({ list: opts.dht.bootstrap, timeout: 0 })] : [],
    services: opts.dht != null
      ? { identify: identify(), ping: ping(), dht: loopbackDht({ server: opts.dht.server === true, recordLifetimeMs: opts.dht.recordLifetimeMs, cleanupIntervalMs: opts.dht.cleanupIntervalMs }) }
      : { identify: identify() }
  }))
  await helia.start()
  const fs = unixfs(helia)
  const peer = {
    helia,
    privateKey,
    blocksDir: dir,
    peerId: helia.libp2p.peerId.toString(),
    multiaddrs: () => helia.libp2p.getMultiaddrs().map(m => m.toString()),
    /** blocks read from its store so far (counted with readDelayMs only) */
    reads: () => reads,
    /** UnixFS file as pind imports uploads (CIDv1, raw leaves, 1 MiB chunks) */
    async addBytes (bytes) {
      return (await fs.addBytes(bytes, { cidVersion: 1, rawLeaves: true })).toString()
    },
    async addRandom (size) {
      const bytes = randomBytes(size)
      return { cid: await peer.addBytes(bytes), bytes }
    },
    async putBlock (cid, bytes) {
      await blockstore.put(cid, bytes)
    },
    /**
     * A dag-pb root over raw leaves whose links under-declare their sizes
     * (Tsize 1 each): the root claims a tiny DAG that is really `leaves × leafSize` bytes.
     */
    async addLyingDag (leaves, leafSize) {
      const links = []
      for (let i = 0; i < leaves; i++) {
        const leaf = randomBytes(leafSize)
        const cid = rawCid(leaf)
        await blockstore.put(cid, leaf)
        links.push({ Hash: cid, Name: '', Tsize: 1 })
      }
      const root = dagPb.encode(dagPb.prepare({ Links: links }))
      const cid = CID.createV1(dagPb.code, Digest.create(SHA256, createHash('sha256').update(root).digest()))
      await blockstore.put(cid, root)
      return cid.toString()
    },
    async dial (addr) {
      await helia.libp2p.dial(multiaddr(addr))
    },
    /** announces a CID on the DHT (stock kad-dht provide) */
    async provide (cid) {
      await helia.routing.provide(typeof cid === 'string' ? CID.parse(cid) : cid)
    },
    /** peer IDs the DHT names as providers of a CID */
    async findProviders (cid, signal) {
      const out = []
      for await (const p of helia.libp2p.services.dht.findProviders(typeof cid === 'string' ? CID.parse(cid) : cid, { signal })) {
        if (p.name === 'PROVIDER') out.push(...p.providers.map(x => x.id.toString()))
      }
      return [...new Set(out)]
    },
    /** waits until the DHT routing table holds at least `n` peers */
    async routingTableAtLeast (n, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs
      while ((helia.libp2p.services.dht?.routingTable.size ?? 0) < n) {
        if (Date.now() > deadline) throw new Error('the DHT routing table did not fill')
        await new Promise(resolve => setTimeout(resolve, 50))
      }
    },
    /** Reads a UnixFS file through the network (bitswap) into one buffer. */
    async cat (cid, signal) {
      const chunks = []
      for await (const c of fs.cat(CID.parse(cid), { signal })) chunks.push(c)
      return Buffer.concat(chunks)
    },
    async stop (opts2 = {}) {
      await helia.stop()
      await blockstore.close()
      if (opts2.keepBlocks !== true && opts.blocksDir == null) rmSync(dir, { recursive: true, force: true })
    }
  }
  return peer
}
