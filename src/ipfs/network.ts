/**
 * Getting blocks we do not hold from other peers: dial the pin request's
 * origins (and the configured peers) first — bitswap only asks connected
 * peers, and a dead provider hint would otherwise hang until the signal —
 * then want each block over bitswap and check it against its CID's hash.
 * Blocks fetched here are returned, not stored: the caller stages them.
 */
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { CID } from 'multiformats/cid'
import type { IpfsNode } from './node.js'
import { dialableOrigins, type OriginPolicy } from './origins.js'
import { WantCancels, type BitswapInternals } from './want-cancels.js'

/** bitswap's own default: larger blocks are refused */
export const MAX_BLOCK_BYTES = 2_097_152
/** the most origins a pin request may list (see service/pins/pin-request.ts) */
const MAX_ORIGINS = 20

export class BlockHashMismatchError extends Error {
  override name = 'BlockHashMismatchError'
}

export interface DialOutcome {
  connected: number
  failed: Array<{ addr: string, error: string }>
}

/**
 * Blocks fetched to be asked for again soon (the root block probed for a
 * quote, then fetched for the pin once paid), kept by CID so the paid fetch
 * does not want it again. Any block bitswap takes (up to MAX_BLOCK_BYTES) is
 * kept, for RECENT_TTL_MS, within a byte budget (oldest first out). A kept
 * block goes when a fetch that stores it takes it, or by a timer when its time
 * is up, so nothing stays held once idle (docs/internals.md, network.ts).
 */
const RECENT_MAX_BYTES = 16 * 1024 * 1024
/**
 * A minute: an x402 client sends the paid retry right after the 402, and one
 * that comes back later costs only a second want of the root. The quote stays
 * valid meanwhile: SizeProbe remembers what the root declared, not its bytes.
 */
const RECENT_TTL_MS = 60_000

/** sha2-256: the hash whose check bitswap's own on arrival can stand for (see hashedAs) */
const SHA2_256 = 0x12

export class BlockNetwork {
  /**
   * The multihash bitswap computed for each block it handed out, by the
   * block's bytes (the very object the want returns; see hashedAs).
   */
  private readonly hashed = new WeakMap<Uint8Array, Uint8Array>()
  /** the bitswap want list listened to for them */
  private watched: unknown
  private readonly recent = new Map<string, { bytes: Uint8Array, until: number }>()
  private recentBytes = 0
  /** drops kept blocks whose time is up (set while any is kept; keeps no process alive) */
  private expiry: NodeJS.Timeout | undefined
  private readonly cancels: WantCancels

  /** `originPolicy`: which addresses request-supplied origins may make this node dial (see origins.ts) */
  constructor (private readonly node: Pick<IpfsNode, 'dial' | 'isConnected' | 'connections' | 'bitswap' | 'getHasher'>, private readonly peers: string[] = [], private readonly originPolicy: OriginPolicy = 'public') {
    this.cancels = new WantCancels(() => (node.bitswap() as unknown as { bitswap: BitswapInternals }).bitswap, (peer) => node.isConnected(peer.toString()))
  }

  /**
   * Dials origins and configured peers (in parallel, each bounded by the
   * signal). Origins come from requests: only those the origin policy allows
   * are dialled, at most `maxOrigins` of them (default all a request may
   * list); configured peers are the operator's and always dialled.
   */
  async dial (origins: string[], signal: AbortSignal, opts: { maxOrigins?: number } = {}): Promise<DialOutcome> {
    const allowed = await dialableOrigins(origins, { policy: this.originPolicy, max: opts.maxOrigins ?? MAX_ORIGINS, signal })
    const failed: DialOutcome['failed'] = allowed.skipped.map(s => ({ addr: s.addr, error: `not dialled: ${s.why}` }))
    const addrs: Array<string | Multiaddr> = [...allowed.addrs, ...this.peers]
    await Promise.all(addrs.map(async (addr) => {
      let ma: Multiaddr
      try { ma = typeof addr === 'string' ? multiaddr(addr) : addr } catch { failed.push({ addr: String(addr), error: 'not a multiaddr' }); return }
      const peer = ma.getComponents().findLast(c => c.name === 'p2p')?.value
      if (peer != null && this.node.isConnected(peer)) return
      try {
        await this.node.dial(ma, { signal })
      } catch (err) {
        failed.push({ addr: ma.toString(), error: shortError(err) })
      }
    }))
    return { connected: this.node.connections().length, failed }
  }

  connectedPeers (): number {
    return this.node.connections().length
  }

  /**
   * One block from connected peers over bitswap, hash-checked; waits until
   * the signal aborts. `remember`: keep it to answer the next want of it
   * (see RECENT_MAX_BYTES).
   */
  async retrieve (cid: CID, signal: AbortSignal, opts: { remember?: boolean } = {}): Promise<Uint8Array> {
    const key = Buffer.from(cid.multihash.bytes).toString('base64')
    const hit = this.recent.get(key)
    if (hit != null && hit.until > Date.now()) {
      // a fetch that stores the block takes it for good; a quote may ask again
      if (opts.remember !== true) this.forget(key)
      return hit.bytes
    }
    const broker = this.node.bitswap()
    this.watch()
    const bytes = await this.cancels.want(cid, signal, async () => await broker.retrieve?.(cid, { signal, maxSize: MAX_BLOCK_BYTES }) as Uint8Array)
    if (!this.hashedAs(cid, bytes)) await verifyBlock(this.node, cid, bytes)
    if (opts.remember === true) this.remember(key, bytes)
    return bytes
  }

  /**
   * Did bitswap already hash these bytes to this CID's multihash? It hashes
   * every block it receives, so hashing again is wasted CPU. Its match is on the
   * digest alone (an identity-hash "block" with the wanted digest would pass),
   * so its check stands for ours only when the multihash it computed, code and
   * length included, is this CID's sha2-256. Anything else is hashed here.
   */
  private hashedAs (cid: CID, bytes: Uint8Array): boolean {
    if (cid.multihash.code !== SHA2_256 || cid.multihash.size !== 32) return false
    const seen = this.hashed.get(bytes)
    return seen != null && Buffer.from(seen.buffer, seen.byteOffset, seen.byteLength).equals(cid.multihash.bytes)
  }

  /** Listens to bitswap's want list for the multihash it computed of each block it received (once per want list). */
  private watch (): void {
    const wantList = (this.node.bitswap() as unknown as { bitswap?: { wantList?: Partial<EventTarget> } }).bitswap?.wantList
    if (wantList == null || wantList === this.watched || typeof wantList.addEventListener !== 'function') return
    this.watched = wantList
    wantList.addEventListener('block', (e) => {
      const d = (e as CustomEvent<{ block?: unknown, cid?: CID }> | undefined)?.detail
      if (d?.block instanceof Uint8Array && d.cid?.multihash?.bytes instanceof Uint8Array) this.hashed.set(d.block, d.cid.multihash.bytes)
    })
  }

  /** blocks kept to be asked for again, and their bytes */
  kept (): { blocks: number, bytes: number } {
    return { blocks: this.recent.size, bytes: this.recentBytes }
  }

  private remember (key: string, bytes: Uint8Array): void {
    if (bytes.byteLength > MAX_BLOCK_BYTES) return
    const now = Date.now()
    for (const [k, v] of this.recent) {
      if (v.until > now && this.recentBytes + bytes.byteLength <= RECENT_MAX_BYTES) break
      this.forget(k)
    }
    if (this.recent.has(key)) return
    // bitswap hands a block out as a view into the whole message it came in (up to a few MiB):
    // keep a copy of the block alone, or the budget counts bytes while whole messages stay held
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice()
    this.recent.set(key, { bytes: own, until: now + RECENT_TTL_MS })
    this.recentBytes += bytes.byteLength
    this.expire()
  }

  private forget (key: string): void {
    const v = this.recent.get(key)
    if (v == null) return
    this.recent.delete(key)
    this.recentBytes -= v.bytes.byteLength
  }

  /** Drops the kept blocks whose time is up, and sets the timer for the next (entries are in order of their time). */
  private expire (): void {
    if (this.expiry != null) return
    const now = Date.now()
    for (const [k, v] of this.recent) {
      if (v.until > now) break
      this.forget(k)
    }
    const next = this.recent.values().next().value
    if (next == null) return
    this.expiry = setTimeout(() => {
      this.expiry = undefined
      this.expire()
    }, next.until - now)
    this.expiry.unref()
  }

  /** Tells peers that asked for this block that we have it now. */
  async announce (cid: CID): Promise<void> {
    await this.node.bitswap().announce?.(cid)
  }
}

export async function verifyBlock (node: Pick<IpfsNode, 'getHasher'>, cid: CID, bytes: Uint8Array): Promise<void> {
  const hasher = await node.getHasher(cid.multihash.code)
  const digest = await hasher.digest(bytes)
  if (!Buffer.from(digest.digest).equals(cid.multihash.digest)) throw new BlockHashMismatchError(`block ${cid.toString()} does not match its hash`)
}

function shortError (err: unknown): string {
  const e = err as Error
  return (e?.name != null && e.name !== 'Error' ? `${e.name}: ` : '') + String(e?.message ?? err).slice(0, 200)
}
