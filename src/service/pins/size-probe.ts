/**
 * How big is a DAG we may not hold yet? Before quoting a pin by CID, pind
 * tries briefly to get the root block — from its own blockstore, else from
 * the request's origins and connected peers — and reads the size the root
 * declares (see ipfs/dag-links.ts).
 *
 * Probes reach out to the network on an unpaid request, so they are bounded
 * and they never make a quote cheaper:
 *   - at most MAX_ACTIVE probes at once, PER_CLIENT of them for one client;
 *     past that the answer is "busy" (the caller answers 503 / 429 with
 *     Retry-After), never a quote as if the root were unreachable;
 *   - each probe dials at most PROBE_ORIGINS of the request's origins;
 *   - only what the root says is remembered (so the paid retry of a 402 is
 *     quoted exactly like the first request); "could not get it in time"
 *     is not, so one client's dead origins cannot set another's price;
 *   - a block held here counts only if the node serves it (a live pin's, by
 *     default): the quote does not tell what else the node still holds.
 */
import type { CID } from 'multiformats/cid'
import { declaredSize, type DeclaredSize } from '../../ipfs/dag-links.js'
import type { BlockNetwork } from '../../ipfs/network.js'
import type { IpfsNode } from '../../ipfs/node.js'

const MAX_ENTRIES = 10_000
/** what the roots held here declare, remembered (a block's bytes never change: its CID is their hash) */
const MAX_LOCAL_ENTRIES = 1_000
/** probes that reach out to the network at once */
const MAX_ACTIVE = 16
/** ... of them for one client */
const PER_CLIENT = 4
/** origins one probe dials (the paid fetch dials them all) */
const PROBE_ORIGINS = 4

export interface ProbeResult {
  size?: DeclaredSize
  /**
   * where the root came from; or why it could not be had: not in time
   * (`timeout`), all probes in use (`busy`), this client's probes in use
   * (`client-busy`); or what it is: a root that declares no size
   * (`undeclared`), bytes that are not what the CID's codec says (`invalid`)
   */
  source: 'local' | 'network' | 'timeout' | 'undeclared' | 'invalid' | 'busy' | 'client-busy'
  /** `invalid`: why */
  invalid?: string
}

/** the root could not be had in time: one answer for all (the quotes made on it are kept by it, pin-create.ts) */
const TIMED_OUT: ProbeResult = Object.freeze({ source: 'timeout' })

export class SizeProbe {
  private readonly cache = new Map<string, { result: ProbeResult, until: number }>()
  /**
   * what the roots held here declared, least recently asked first: each 402 for a local root read and
   * decoded its block. `removals`: the block store's count when it was last seen held (see probe)
   */
  private readonly local = new Map<string, { result: ProbeResult, removals: number }>()
  private readonly inflight = new Map<string, Promise<ProbeResult>>()
  private readonly byClient = new Map<string, number>()
  private active = 0

  constructor (private readonly o: {
    node: Pick<IpfsNode, 'blockstore'>
    network: Pick<BlockNetwork, 'dial' | 'retrieve'>
    timeoutMs: number
    /** how long what a root says is remembered (the payment validity) */
    ttlMs: number
    /** may a block held here be used (and so be seen to be held)? The gateway's rule. */
    isServable: (cid: CID) => boolean
    /**
     * how many times blocks have been removed from the store (gc, a switch of stores): while it reads
     * the same, a root seen held is held still, and the store is not asked again. Without it, it is
     * asked on every probe.
     */
    removals?: () => number
    /** with --routing on: looks for providers of the root and connects to them */
    findProviders?: (cid: CID, signal: AbortSignal) => Promise<unknown>
  }) {}

  /** how long a busy client should wait: a probe ends within its timeout */
  get retryAfterSeconds (): number {
    return Math.max(1, Math.ceil(this.o.timeoutMs / 1000))
  }

  /**
   * The answer when it is at hand, without asking the block store or the
   * network: a root held here and seen held since the last removal, or one
   * not held here whose answer is remembered (or with probes off, "not in
   * time"). Synchronous: the unpaid 402 for such a CID awaits nothing once
   * its body is read (pin-create.ts). Undefined: ask `probe`.
   */
  known (cid: CID): ProbeResult | undefined {
    const key = cid.toV1().toString()
    if (this.o.isServable(cid)) {
      const known = this.local.get(key)
      const removals = this.o.removals?.()
      return known != null && removals != null && known.removals === removals ? this.used(key, known).result : undefined
    }
    return this.remembered(key)
  }

  async probe (cid: CID, origins: string[], client = ''): Promise<ProbeResult> {
    const now = this.known(cid)
    if (now != null) return now
    const key = cid.toV1().toString()
    // held here, but not seen held since the last removal (gc): the store is asked. The count is read
    // before it is asked, and moves once a removal has ended, so a removal under way while it is
    // asked makes the answer count for nothing
    if (this.o.isServable(cid)) {
      const removals = this.o.removals?.()
      if (await this.o.node.blockstore.has(cid)) {
        const known = this.local.get(key)
        if (known != null) {
          known.removals = removals ?? -1
          return this.used(key, known).result
        }
        const chunks: Uint8Array[] = []
        for await (const c of this.o.node.blockstore.get(cid)) chunks.push(c)
        const result = found(cid, Buffer.concat(chunks), 'local')
        if (this.local.size >= MAX_LOCAL_ENTRIES) this.local.delete(this.local.keys().next().value as string)
        this.local.set(key, { result, removals: removals ?? -1 })
        return result
      }
    }
    const remembered = this.remembered(key)
    if (remembered != null) return remembered
    // probes are shared only by requests naming the same origins: another's dead origins are not mine
    const flight = `${key} ${[...origins].sort().join(' ')}`
    let p = this.inflight.get(flight)
    if (p == null) {
      if (this.active >= MAX_ACTIVE) return { source: 'busy' }
      const mine = this.byClient.get(client) ?? 0
      if (mine >= PER_CLIENT) return { source: 'client-busy' }
      this.active++
      this.byClient.set(client, mine + 1)
      p = this.look(cid, origins).finally(() => {
        this.inflight.delete(flight)
        this.active--
        const left = (this.byClient.get(client) ?? 1) - 1
        if (left > 0) this.byClient.set(client, left)
        else this.byClient.delete(client)
      })
      this.inflight.set(flight, p)
    }
    const result = await p
    if (result.source === 'network' || result.source === 'undeclared' || result.source === 'invalid') this.remember(key, result)
    return result
  }

  /** what a root not held here said, while remembered; with probes off, "not in time" */
  private remembered (key: string): ProbeResult | undefined {
    const hit = this.cache.get(key)
    if (hit != null && hit.until > Date.now()) return hit.result
    return this.o.timeoutMs <= 0 ? TIMED_OUT : undefined
  }

  /** `entry`, now the most recently asked */
  private used<T> (key: string, entry: T): T {
    this.local.delete(key)
    this.local.set(key, entry as { result: ProbeResult, removals: number })
    return entry
  }

  private async look (cid: CID, origins: string[]): Promise<ProbeResult> {
    const signal = AbortSignal.timeout(this.o.timeoutMs)
    let bytes: Uint8Array
    try {
      this.o.findProviders?.(cid, signal).catch(() => {})
      await this.o.network.dial(origins, signal, { maxOrigins: PROBE_ORIGINS })
      // kept: the paid pin wants this block again right away (see ipfs/network.ts)
      bytes = await this.o.network.retrieve(cid, signal, { remember: true })
    } catch {
      return TIMED_OUT
    }
    return found(cid, bytes, 'network')
  }

  /**
   * Entries are in the order they expire (one TTL for all; a renewed one is
   * moved to the end), so the expired ones are dropped from the front on each
   * write: the cache holds what one TTL of quotes saw, not up to MAX_ENTRIES
   * of them whatever their age. (It used to sweep only when full: the soak's
   * heap snapshots showed it growing by 185 entries a minute, 3,511 after 19
   * minutes where 2,700 were live, towards ~3 MB at the cap.)
   */
  private remember (key: string, result: ProbeResult): void {
    const now = Date.now()
    for (const [k, v] of this.cache) {
      if (v.until > now) break
      this.cache.delete(k)
    }
    if (this.cache.has(key)) return
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value as string)
    this.cache.set(key, { result, until: now + this.o.ttlMs })
  }

  /** entries held (tests) */
  get cached (): number {
    return this.cache.size
  }
}

/** What a root block (hash-checked) declares; bytes its CID's codec cannot decode are `invalid`. */
function found (cid: CID, bytes: Uint8Array, source: 'local' | 'network'): ProbeResult {
  let size: DeclaredSize | undefined
  try {
    size = declaredSize(cid, bytes)
  } catch (err) {
    return { source: 'invalid', invalid: String((err as Error)?.message ?? err).slice(0, 120) }
  }
  return size != null ? { size, source } : { source: 'undeclared' }
}
