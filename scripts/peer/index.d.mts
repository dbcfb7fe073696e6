// Hand-written types for index.mjs.
import type { Helia } from '@helia/interface'
import type { Libp2p, PrivateKey } from '@libp2p/interface'
import type { CID } from 'multiformats/cid'

export interface PeerOptions {
  /** fixed TCP port; default any free port */
  port?: number
  privateKey?: PrivateKey
  /** keep blocks here (not removed on stop) */
  blocksDir?: string
  /** every block read (bitswap's answers included) waits this long first: an origin on slow disks */
  readDelayMs?: number
  /** join a loopback DHT (scripts/dht-net) through these bootstrap multiaddrs; server: answer DHT queries and keep records (for recordLifetimeMs) */
  dht?: { bootstrap: string[], server?: boolean, recordLifetimeMs?: number, cleanupIntervalMs?: number }
}

export interface Peer {
  helia: Helia & { libp2p: Libp2p }
  privateKey: PrivateKey
  blocksDir: string
  peerId: string
  multiaddrs(): string[]
  /** blocks read from its store so far (counted with readDelayMs only) */
  reads(): number
  addBytes(bytes: Uint8Array): Promise<string>
  addRandom(size: number): Promise<{ cid: string, bytes: Buffer }>
  putBlock(cid: CID, bytes: Uint8Array): Promise<void>
  addLyingDag(leaves: number, leafSize: number): Promise<string>
  dial(addr: string): Promise<void>
  provide(cid: string | CID): Promise<void>
  findProviders(cid: string | CID, signal?: AbortSignal): Promise<string[]>
  routingTableAtLeast(n: number, timeoutMs?: number): Promise<void>
  cat(cid: string, signal?: AbortSignal): Promise<Buffer>
  stop(opts?: { keepBlocks?: boolean }): Promise<void>
}

export declare function rawCid(bytes: Uint8Array): CID
export declare function startPeer(opts?: PeerOptions): Promise<Peer>
