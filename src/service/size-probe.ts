/**
 * How big is a DAG we may not hold yet? Before quoting a pin by CID, pind
 * tries briefly to get the root block — from its own blockstore, else from
 * the request's origins and connected peers — and reads the size the root
 * declares (see ipfs/dag-links.ts). Results are remembered for a while so
 * the paid retry of a 402 is quoted exactly like the first request.
 */
import type { CID } from 'multiformats/cid'
import { declaredSize, type DeclaredSize } from '../ipfs/dag-links.js'
import type { BlockNetwork } from '../ipfs/network.js'
import type { IpfsNode } from '../ipfs/node.js'

const MAX_ENTRIES = 10_000
/** probes that reach out to the network at once; past this, quotes fall back as if the root were unreachable */
const MAX_ACTIVE = 16

export interface ProbeResult {
  size?: DeclaredSize
  /** where the root came from, or why it could not be had */
  source: 'local' | 'network' | 'timeout' | 'undeclared' | 'busy'
}

export class SizeProbe {
  private readonly cache = new Map<string, { result: ProbeResult, until: number }>()
  private readonly inflight = new Map<string, Promise<ProbeResult>>()
  private active = 0

  constructor (private readonly o: {
    node: IpfsNode
    network: BlockNetwork
    timeoutMs: number
    /** how long a found size is remembered (the payment validity) */
    ttlMs: number
    /** how long "could not get the root" is remembered */
    missTtlMs: number
  }) {}

  async probe (cid: CID, origins: string[]): Promise<ProbeResult> {
    const key = `${cid.toV1().toString()}`
    const hit = this.cache.get(key)
    if (hit != null && hit.until > Date.now()) return hit.result
    let p = this.inflight.get(key)
    if (p == null) {
      p = this.look(cid, origins).finally(() => this.inflight.delete(key))
      this.inflight.set(key, p)
    }
    const result = await p
    this.remember(key, result)
    return result
  }

  private async look (cid: CID, origins: string[]): Promise<ProbeResult> {
    const bs = this.o.node.blockstore
    if (await bs.has(cid)) {
      const chunks: Uint8Array[] = []
      for await (const c of bs.get(cid)) chunks.push(c)
      return found(cid, Buffer.concat(chunks), 'local')
    }
    if (this.o.timeoutMs <= 0) return { source: 'timeout' }
    if (this.active >= MAX_ACTIVE) return { source: 'busy' }
    this.active++
    const signal = AbortSignal.timeout(this.o.timeoutMs)
    try {
      await this.o.network.dial(origins, signal)
      return found(cid, await this.o.network.retrieve(cid, signal), 'network')
    } catch {
      return { source: 'timeout' }
    } finally {
      this.active--
    }
  }

  private remember (key: string, result: ProbeResult): void {
    if (this.cache.size >= MAX_ENTRIES) {
      const now = Date.now()
      for (const [k, v] of this.cache) if (v.until <= now) this.cache.delete(k)
      if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value as string)
    }
    const current = this.cache.get(key)
    if (current == null || current.until <= Date.now()) {
      this.cache.set(key, { result, until: Date.now() + (result.size != null ? this.o.ttlMs : this.o.missTtlMs) })
    }
  }
}

function found (cid: CID, bytes: Uint8Array, source: 'local' | 'network'): ProbeResult {
  const size = declaredSize(cid, bytes)
  return size != null ? { size, source } : { source: 'undeclared' }
}
