// Hand-written types for index.mjs.
import type { Libp2p } from '@libp2p/interface'
import type { MemoryDatastore } from 'datastore-core'
import type { CID } from 'multiformats/cid'

export declare const AMINO: '/ipfs/kad/1.0.0'

export interface DhtNetworkOptions {
  /** DHT server nodes; default 10 */
  nodes?: number
  /** how many earlier nodes each node dials; default all (a full mesh) */
  links?: number
  /** how long the nodes keep provider records; default 48 h */
  recordLifetimeMs?: number
  /** how often they delete expired ones; default 1 h */
  cleanupIntervalMs?: number
}

export interface DhtNode {
  libp2p: Libp2p<{ dht: any }>
  datastore: MemoryDatastore
  peerId: string
  multiaddr: string
}

export interface DhtNetwork {
  nodes: DhtNode[]
  addrs(n?: number): string[]
  records(cid: string | CID, provider: string): Promise<Array<{ node: string, at: number }>>
  connectionsWith(peerId: string): Array<{ node: string, direction: string }>
  watchConnections(peerId: string): { seen: Array<{ node: string, direction: string }>, stop(): void }
  dial(addr: string): Promise<void>
  stop(): Promise<void>
}

export declare function loopbackDht(opts?: { server?: boolean, recordLifetimeMs?: number, cleanupIntervalMs?: number }): unknown
export declare function startDhtNetwork(opts?: DhtNetworkOptions): Promise<DhtNetwork>
