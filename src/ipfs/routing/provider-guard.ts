/**
 * What a DHT server here takes from ADD_PROVIDER. Any libp2p peer may send
 * it; @libp2p/kad-dht's own handler stores the record and merges every
 * address the message names into the peer store, with no limit, at a cost
 * that grows with the addresses stored (docs/internals.md, provider-guard.ts).
 * So:
 *
 * - an inbound DHT stream announcing a message over MAX_INBOUND_MESSAGE_BYTES
 *   is cut before kad-dht has read it whole;
 *
 * and before kad-dht's ADD_PROVIDER handler sees a message:
 *
 * - per peer, at most RATE_BURST messages at once and RATE_PER_SECOND
 *   sustained (a token bucket); a message past that is dropped unread;
 * - of the provider entries only the sender's own (kad-dht ignores the
 *   others anyway), and of its addresses only the first
 *   MAX_ADDRS_PER_MESSAGE are looked at (the rest are not even parsed);
 * - of those, only addresses the routing would dial a provider at (as
 *   find.ts: TCP over IPv4/IPv6 exactly, no private, loopback or DNS address
 *   unless `--routing-private-addresses`), and no more new ones than bring
 *   the peer to MAX_ADDRS_PER_PEER stored (libp2p forgets an address an hour
 *   after it was stored); one message per peer is handled at a time, so
 *   parallel streams cannot each fill the cap;
 * - a message that leaves the peer with no address here stores no record
 *   (kad-dht skips a provider without addresses); one that adds no address
 *   stores the record alone.
 *
 * The provider-record budget (`--dht-max-records`, each peer's share
 * `--dht-max-records-per-peer`) is the datastore's (datastore.ts).
 *
 * kad-dht has no option for any of this and does not export its handlers:
 * the length watch is put on its inbound streams through the registrar it is
 * given (libp2p-options.ts), and `installProviderGuard` wraps the KadDHT
 * instance's ADD_PROVIDER handler; it throws at start if that handler is not
 * where kad-dht 16.4 keeps it, rather than run unguarded.
 */
import { setImmediate as turnOfTheLoop } from 'node:timers/promises'
import type { Connection, PeerId, PeerStore, Stream, StreamHandler } from '@libp2p/interface'
import { isPrivate } from '@libp2p/utils'
import { CODE_P2P, multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { CID } from 'multiformats/cid'

/** raw address entries of one message that are looked at; the rest are ignored unparsed */
export const MAX_ADDRS_PER_MESSAGE = 64
/** addresses kept for one peer from provider messages */
export const MAX_ADDRS_PER_PEER = 16
/**
 * The largest message a peer may send on an inbound DHT stream. kad-dht reads
 * a stream's messages whole (up to 4 MiB) and decodes each before any handler
 * sees it, which is slow for a large one. A request is small (an IPNS record,
 * the largest, is at most 10 KiB), so a stream that announces a longer
 * message is cut before the message is read.
 */
export const MAX_INBOUND_MESSAGE_BYTES = 16 * 1024
/** ADD_PROVIDER messages from one peer: at once, then per second */
export const RATE_BURST = 1024
export const RATE_PER_SECOND = 64
/** peers whose rate is tracked; past that the least recently seen is forgotten (its bucket starts full again) */
const TRACKED_PEERS = 4096

/** the ADD_PROVIDER message as kad-dht's codec decodes it */
interface ProviderMessage {
  key?: Uint8Array
  providers: Array<{ id: Uint8Array, multiaddrs: Uint8Array[] }>
}

interface Handler {
  handle(peerId: PeerId, msg: ProviderMessage): Promise<unknown>
}

export interface ProviderGuardStatus {
  /** inbound DHT streams cut: a message longer than MAX_INBOUND_MESSAGE_BYTES */
  tooLarge: number
  /** ADD_PROVIDER messages dropped unread: the sender was over its rate */
  refused: number
  /** addresses not stored: past the message's or the peer's cap, or not dialable */
  addressesDropped: number
}

export class ProviderGuard implements ProviderGuardStatus {
  tooLarge = 0
  refused = 0
  addressesDropped = 0
  private readonly buckets = new Map<string, { tokens: number, at: number }>()

  constructor (private readonly o: { allowPrivate: boolean, now?: () => number }) {}

  /** Would the routing dial this provider address? TCP over IPv4/IPv6 (DNS too when private addresses are allowed). */
  dialable (a: Multiaddr): boolean {
    const names = a.getComponents().map(c => c.name)
    const last = names.at(-1) === 'p2p' ? names.length - 1 : names.length
    if (last !== 2 || names[1] !== 'tcp') return false
    if (this.o.allowPrivate) return ['ip4', 'ip6', 'dns', 'dns4', 'dns6'].includes(names[0] as string)
    return (names[0] === 'ip4' || names[0] === 'ip6') && !isPrivate(a)
  }

  /** takes one message from `peer`'s bucket; false when it is empty */
  admit (peer: PeerId): boolean {
    const k = peer.toString()
    const now = (this.o.now ?? Date.now)()
    const b = this.buckets.get(k) ?? { tokens: RATE_BURST, at: now }
    this.buckets.delete(k)
    b.tokens = Math.min(RATE_BURST, b.tokens + (now - b.at) * RATE_PER_SECOND / 1000)
    b.at = now
    this.buckets.set(k, b)
    if (this.buckets.size > TRACKED_PEERS) this.buckets.delete(this.buckets.keys().next().value as string)
    if (b.tokens < 1) {
      this.refused++
      return false
    }
    b.tokens--
    return true
  }

  /**
   * The addresses of `raw` to merge for `peer`, given those stored for it
   * now: the stored ones it names again, then new dialable ones while the
   * peer has room.
   */
  select (raw: Uint8Array[], stored: Set<string>): { again: Uint8Array[], fresh: Uint8Array[] } {
    const again: Uint8Array[] = []
    const fresh: Uint8Array[] = []
    const seen = new Set<string>()
    const looked = raw.slice(0, MAX_ADDRS_PER_MESSAGE)
    let dropped = raw.length - looked.length
    for (const bytes of looked) {
      let ma: Multiaddr
      try { ma = multiaddr(bytes) } catch { dropped++; continue }
      const s = withoutPeer(ma).toString()
      if (seen.has(s)) continue
      seen.add(s)
      if (stored.has(s)) again.push(bytes)
      else if (this.dialable(ma) && stored.size + fresh.length < MAX_ADDRS_PER_PEER) fresh.push(bytes)
      else dropped++
    }
    this.addressesDropped += dropped
    return { again, fresh }
  }

  /**
   * `handler` (kad-dht's, for inbound DHT streams) behind a watch on the
   * stream's bytes: the length prefix of each message is read as it arrives,
   * and a stream announcing one longer than MAX_INBOUND_MESSAGE_BYTES is
   * aborted at once, before kad-dht has the message whole.
   */
  inbound (handler: StreamHandler): StreamHandler {
    return (stream: Stream, connection: Connection) => {
      watchMessageLengths(stream, MAX_INBOUND_MESSAGE_BYTES, () => { this.tooLarge++ })
      return handler(stream, connection)
    }
  }

  status (): ProviderGuardStatus {
    return { tooLarge: this.tooLarge, refused: this.refused, addressesDropped: this.addressesDropped }
  }
}

/** Follows the length-prefixed (unsigned varint) framing of what `stream` receives; aborts it at a length over `max`. */
function watchMessageLengths (stream: Stream, max: number, onTooLarge: () => void): void {
  let left = 0
  let length = 0
  let shift = 0
  let done = false
  const onMessage = (evt: Event): void => {
    if (done) return
    const data = (evt as Event & { data: Uint8Array | Iterable<Uint8Array> }).data
    for (const chunk of data instanceof Uint8Array ? [data] : data) {
      let i = 0
      while (i < chunk.byteLength) {
        if (left > 0) {
          const n = Math.min(left, chunk.byteLength - i)
          left -= n
          i += n
          continue
        }
        const b = chunk[i++] as number
        length += (b & 0x7f) * 2 ** shift
        shift += 7
        if ((b & 0x80) !== 0 && shift < 35) continue
        if (length > max || (b & 0x80) !== 0) {
          done = true
          stream.removeEventListener('message', onMessage)
          onTooLarge()
          stream.abort(new Error(`DHT message of ${length} bytes (at most ${max})`))
          return
        }
        left = length
        length = 0
        shift = 0
      }
    }
  }
  stream.addEventListener('message', onMessage)
}

function withoutPeer (ma: Multiaddr): Multiaddr {
  return ma.getComponents().at(-1)?.name === 'p2p' ? ma.decapsulateCode(CODE_P2P) : ma
}

/**
 * Puts `guard` in front of kad-dht's ADD_PROVIDER handler on `dht` (a KadDHT
 * instance as kadDHT() builds it). Throws if kad-dht keeps its handlers
 * elsewhere (a kad-dht upgrade): pind must not run as a DHT server unguarded.
 */
export function installProviderGuard<T> (dht: T, peerStore: PeerStore, guard: ProviderGuard): T {
  const handlers = (dht as { rpc?: { handlers?: Record<string, Handler> } }).rpc?.handlers
  const original = handlers?.ADD_PROVIDER
  if (handlers == null || typeof original?.handle !== 'function') throw new Error('@libp2p/kad-dht keeps no ADD_PROVIDER handler at rpc.handlers.ADD_PROVIDER: the provider guard cannot be installed (see src/ipfs/routing/provider-guard.ts)')
  // KadDHT's public provider store (what kad-dht's handler calls)
  const providers = (dht as { providers?: { addProvider?: (cid: CID, peer: PeerId) => Promise<void> } }).providers
  if (typeof providers?.addProvider !== 'function') throw new Error('@libp2p/kad-dht has no providers.addProvider: the provider guard cannot be installed (see src/ipfs/routing/provider-guard.ts)')
  // one message per peer at a time: a peer's messages on parallel streams would otherwise each see
  // the same stored addresses, and each add up to the cap
  const running = new Map<string, Promise<unknown>>()
  const handle = async (peerId: PeerId, msg: ProviderMessage): Promise<unknown> => {
    const self = peerId.toMultihash().bytes
    const own = msg.providers?.find(p => Buffer.from(p.id).equals(self))
    if (own == null) return undefined
    const stored = new Map<string, Uint8Array>()
    try {
      for (const a of (await peerStore.get(peerId)).addresses) stored.set(a.multiaddr.toString(), a.multiaddr.bytes)
    } catch {}
    const { again, fresh } = guard.select(own.multiaddrs ?? [], new Set(stored.keys()))
    if (fresh.length === 0) {
      // no address to add: none for a peer with none here (no record), else the record alone — kad-dht's
      // handler would write the peer's unchanged peer-store record again with each of its records
      if (stored.size === 0) return undefined
      let cid: CID
      try {
        cid = CID.decode(msg.key ?? new Uint8Array(0))
      } catch {
        return await original.handle(peerId, { ...msg, providers: [] }) // kad-dht refuses the key
      }
      await providers.addProvider?.(cid, peerId)
      return undefined
    }
    return await original.handle(peerId, { ...msg, providers: [{ id: own.id, multiaddrs: [...again, ...fresh] }] })
  }
  handlers.ADD_PROVIDER = {
    handle: async (peerId: PeerId, msg: ProviderMessage): Promise<unknown> => {
      // kad-dht handles a stream's buffered messages one after another in microtasks: yield a turn
      // of the event loop between them, or a burst of them holds /health
      await turnOfTheLoop()
      if (!guard.admit(peerId)) return undefined
      const k = peerId.toString()
      const turn = (running.get(k) ?? Promise.resolve()).then(async () => await handle(peerId, msg))
      const settled = turn.catch(() => {})
      running.set(k, settled)
      try {
        return await turn
      } finally {
        if (running.get(k) === settled) running.delete(k)
      }
    }
  }
  return dht
}
