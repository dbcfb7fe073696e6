/**
 * Keeps the peer store bounded. Every peer that connects (and every peer a
 * DHT answer names) gets a record — public key, addresses, protocols, the
 * identify metadata, ~4 KB — and libp2p never removes one by itself. So:
 *
 * - a peer nothing has tagged (the routing table tags its peers `kad-peer`,
 *   configured and bootstrap peers carry keep-alive tags) is deleted
 *   DISCONNECT_GRACE after it disconnects;
 * - every SWEEP_INTERVAL, untagged peers not connected and not seen for
 *   STALE_AFTER go (peers named in DHT answers, leftovers of earlier runs);
 * - above `maxPeers`, the least recently seen untagged unconnected peers go
 *   first, then tagged ones (oldest first), so the store never holds more
 *   than `maxPeers` plus the connected peers (themselves capped by the
 *   connection manager).
 */
import type { Libp2p, PeerId } from '@libp2p/interface'
import type { Logger } from '../../kernel/log.js'

const DISCONNECT_GRACE_MS = 5_000
const SWEEP_INTERVAL_MS = 60_000
const STALE_AFTER_MS = 10 * 60_000

export interface PeerStorePruner {
  /** one sweep now; resolves with the number of records deleted */
  sweep(): Promise<number>
  stop(): void
}

export function startPeerStorePruner (libp2p: Libp2p, opts: { maxPeers: number, log: Logger }): PeerStorePruner {
  const seen = new Map<string, number>()
  const timers = new Set<NodeJS.Timeout>()
  let stopped = false
  const touch = (id: PeerId): void => {
    const k = id.toString()
    seen.delete(k)
    seen.set(k, Date.now())
    // the map only remembers recency; it never grows past a few times the cap
    if (seen.size > opts.maxPeers * 4) seen.delete(seen.keys().next().value as string)
  }
  const connected = (id: PeerId): boolean => libp2p.getConnections(id).length > 0

  const dropIfUntagged = async (id: PeerId): Promise<boolean> => {
    if (id.equals(libp2p.peerId) || connected(id)) return false
    try {
      const peer = await libp2p.peerStore.get(id)
      if (peer.tags.size > 0) return false
      await libp2p.peerStore.delete(id)
      seen.delete(id.toString())
      return true
    } catch {
      return false
    }
  }

  const onDisconnect = (evt: CustomEvent<PeerId>): void => {
    touch(evt.detail)
    if (stopped) return
    const t = setTimeout(() => {
      timers.delete(t)
      void dropIfUntagged(evt.detail)
    }, DISCONNECT_GRACE_MS)
    t.unref()
    timers.add(t)
  }
  const onTouch = (evt: CustomEvent<PeerId | { id: PeerId } | { peer: { id: PeerId } }>): void => {
    const d = evt.detail as PeerId & { id?: PeerId, peer?: { id: PeerId } }
    touch(d.peer?.id ?? d.id ?? d)
  }
  libp2p.addEventListener('peer:disconnect', onDisconnect)
  libp2p.addEventListener('peer:connect', onTouch as (e: CustomEvent<PeerId>) => void)
  libp2p.addEventListener('peer:discovery', onTouch as (e: CustomEvent<{ id: PeerId }>) => void)

  let running: Promise<number> | undefined
  const sweep = async (): Promise<number> => {
    running ??= (async () => {
      const now = Date.now()
      const candidates: Array<{ id: PeerId, tagged: boolean, at: number }> = []
      let total = 0
      for (const peer of await libp2p.peerStore.all()) {
        total++
        if (connected(peer.id)) continue
        candidates.push({ id: peer.id, tagged: peer.tags.size > 0, at: seen.get(peer.id.toString()) ?? 0 })
      }
      let deleted = 0
      const drop = async (id: PeerId): Promise<void> => {
        await libp2p.peerStore.delete(id).catch(() => {})
        seen.delete(id.toString())
        deleted++
      }
      for (const c of candidates) {
        if (!c.tagged && now - c.at > STALE_AFTER_MS) await drop(c.id)
      }
      const over = total - deleted - opts.maxPeers
      if (over > 0) {
        const rest = candidates.filter(c => c.tagged || now - c.at <= STALE_AFTER_MS)
          .sort((a, b) => Number(a.tagged) - Number(b.tagged) || a.at - b.at)
        for (const c of rest.slice(0, over)) await drop(c.id)
      }
      if (deleted > 0) opts.log.debug('peer store pruned', { deleted, kept: total - deleted })
      return deleted
    })().finally(() => { running = undefined })
    return await running
  }
  const interval = setInterval(() => { sweep().catch((err: Error) => { opts.log.warn('peer store sweep failed', { error: err.message }) }) }, SWEEP_INTERVAL_MS)
  interval.unref()
  // leftovers of an earlier run that nothing tagged (also what a --routing none run never persisted)
  sweep().catch(() => {})

  return {
    sweep,
    stop: () => {
      stopped = true
      clearInterval(interval)
      for (const t of timers) clearTimeout(t)
      libp2p.removeEventListener('peer:disconnect', onDisconnect)
      libp2p.removeEventListener('peer:connect', onTouch as (e: CustomEvent<PeerId>) => void)
      libp2p.removeEventListener('peer:discovery', onTouch as (e: CustomEvent<{ id: PeerId }>) => void)
    }
  }
}
