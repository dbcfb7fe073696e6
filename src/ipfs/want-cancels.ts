/**
 * CANCELs for wants that ended, which @helia/bitswap (4.0.19) never sends:
 * its WantList skips every entry marked `cancel` when it builds a message,
 * then forgets it. A peer that runs @helia/bitswap (a Helia node, another
 * pind) keeps each block it sent us in our ledger as "sent" until it hears a
 * cancel; a later want of that block from us is merged into that entry and
 * dropped — inside its 5 s resend window, and after it too, since the stale
 * entry is only swept while the new want is being handled. A fetch attempt
 * that retries blocks the last one was sent, a re-pin after gc, a quote that
 * probes a root again: each waited for --pin-stall-timeout and then failed.
 * And a want made within bitswap's 10 ms send debounce after the previous
 * want of the same block ended joins that ended entry and is dropped with it.
 *
 * So every want goes through here: when the last local want of a block ends
 * (received or abandoned), a CANCEL for it goes to every bitswap peer
 * (batched, through bitswap's own send queue); a new want of a block first
 * waits until its cancel is on the wire and bitswap has dropped the ended
 * entry. (Reaches into @helia/bitswap's WantList and Network, pinned exactly;
 * test/e2e/pins-by-cid.test.ts "re-pinned after gc" fails without them.)
 */
import { base64 } from 'multiformats/bases/base64'
import type { CID } from 'multiformats/cid'
import type { PeerId } from '@libp2p/interface'

/** what this needs of @helia/bitswap's Bitswap (broker.bitswap) */
export interface BitswapInternals {
  wantList: {
    wants: Map<string, { cancel: boolean }>
    peers: { keys(): Iterable<PeerId> }
  }
  network: { sendMessage(peer: PeerId, message: unknown, options?: { signal?: AbortSignal }): Promise<void> }
}

/** batches the cancels of wants that end together (bitswap's own send debounce is 10 ms) */
const FLUSH_AFTER_MS = 10
const SEND_TIMEOUT_MS = 10_000
const POLL_MS = 5

export class WantCancels {
  private readonly active = new Map<string, number>()
  private readonly pending = new Map<string, Uint8Array>()
  /** per block: resolves once its cancel was sent (or could not be) */
  private readonly sending = new Map<string, Promise<void>>()
  private flush: Promise<void> | undefined

  /** `connected`: is this peer connected now (a cancel is not worth a dial) */
  constructor (private readonly bitswap: () => BitswapInternals, private readonly connected: (peer: PeerId) => boolean) {}

  /** Wraps one want of `cid`: waits for an earlier want's cancel, then counts this one while it runs. */
  async want<T> (cid: CID, signal: AbortSignal, run: () => Promise<T>): Promise<T> {
    const key = keyOf(cid)
    if ((this.active.get(key) ?? 0) === 0) await this.settled(key, signal)
    this.active.set(key, (this.active.get(key) ?? 0) + 1)
    try {
      return await run()
    } finally {
      const left = (this.active.get(key) ?? 1) - 1
      if (left > 0) this.active.set(key, left)
      else {
        this.active.delete(key)
        this.ended(key, cid)
      }
    }
  }

  /** until no cancel of this block is waiting to be sent and bitswap has dropped its ended entry */
  private async settled (key: string, signal: AbortSignal): Promise<void> {
    await this.sending.get(key)
    const wants = this.bitswap().wantList.wants
    while (wants.get(key)?.cancel === true) {
      signal.throwIfAborted()
      await new Promise(resolve => setTimeout(resolve, POLL_MS))
    }
  }

  private ended (key: string, cid: CID): void {
    this.pending.set(key, cid.bytes)
    if (this.flush == null) {
      const flush: Promise<void> = new Promise<void>(resolve => setTimeout(resolve, FLUSH_AFTER_MS)).then(async () => { await this.send(flush) })
      this.flush = flush
    }
    this.sending.set(key, this.flush)
  }

  /** never rejects: a cancel that cannot be sent (bitswap stopping, a peer gone) is given up */
  private async send (flush: Promise<void>): Promise<void> {
    const batch = [...this.pending]
    this.pending.clear()
    this.flush = undefined
    // a block wanted again meanwhile is not cancelled (nor waited for: settled() found nothing to wait for)
    const wantlist = new Map<string, unknown>()
    for (const [key, cid] of batch) {
      if (!this.active.has(key)) wantlist.set(key, { cid, priority: 1, cancel: true, wantType: 'WantBlock', sendDontHave: false })
    }
    try {
      if (wantlist.size === 0) return
      const bitswap = this.bitswap()
      const peers = [...bitswap.wantList.peers.keys()].filter(p => this.connected(p))
      await Promise.all(peers.map(async (peer) => {
        // one message object per peer: bitswap's send queue merges later messages into a queued one
        const message = { full: false, pendingBytes: 0, wantlist: new Map(wantlist), blocks: new Map(), blockPresences: new Map() }
        await bitswap.network.sendMessage(peer, message, { signal: AbortSignal.timeout(SEND_TIMEOUT_MS) }).catch(() => {})
      }))
    } catch {
      // bitswap is not running (the node is stopping): nothing to cancel at
    } finally {
      for (const [key] of batch) if (this.sending.get(key) === flush) this.sending.delete(key)
    }
  }
}

/** bitswap's key of a want: the multihash, unpadded base64 (CIDv0/v1 and codecs of one block are one want) */
function keyOf (cid: CID): string {
  return base64.baseEncode(cid.multihash.bytes)
}
