/**
 * ADD_PROVIDER, the Kademlia message that stores a provider record ("this
 * peer, at these addresses, has the block with this multihash") at a DHT
 * server, in the wire format of libp2p's kad-dht spec:
 *
 *   message Message { MessageType type = 1; bytes key = 2; repeated Peer providerPeers = 9; }
 *   message Peer    { bytes id = 1; repeated bytes addrs = 2; }        ADD_PROVIDER = 2
 *
 * A server reads any number of messages from one stream, so a batch of
 * records for one peer goes down a single stream, length-prefixed. ADD_PROVIDER
 * has no reply, and @libp2p/kad-dht stops reading a stream once the sender's
 * side is closed, buffered records included. So every WINDOW records are
 * followed by a PING, answered in order: its reply means every record before
 * it was handled. The next window goes only then, so a server never has more
 * than one window queued (else libp2p's connection monitor may cut it), and a
 * failure mid-batch still counts the windows acknowledged before it.
 * @libp2p/kad-dht does not export its codec; this one uses protons-runtime.
 */
import type { Libp2p, PeerId } from '@libp2p/interface'
import { lpStream } from '@libp2p/utils'
import type { Multiaddr } from '@multiformats/multiaddr'
import { writer } from 'protons-runtime'

const ADD_PROVIDER = 2
const PING = 5
/** records written per stream write (each a few hundred bytes) */
const WRITE_BATCH = 64
/** records sent before waiting for the server to confirm them */
const WINDOW = 256

/** The providerPeers field (tag 9) for this node: encoded once per batch. */
export function providerField (self: PeerId, addrs: Multiaddr[]): Uint8Array {
  const peer = writer()
  peer.uint32(10).bytes(self.toMultihash().bytes)
  for (const a of addrs) peer.uint32(18).bytes(a.bytes)
  const w = writer()
  w.uint32(74).bytes(peer.finish())
  return w.finish()
}

/** One ADD_PROVIDER message for `multihash`, with the provider field from providerField(). */
export function addProviderMessage (multihash: Uint8Array, provider: Uint8Array): Uint8Array {
  const w = writer()
  w.uint32(8).int32(ADD_PROVIDER)
  w.uint32(18).bytes(multihash)
  const head = w.finish()
  const out = new Uint8Array(head.byteLength + provider.byteLength)
  out.set(head, 0)
  out.set(provider, head.byteLength)
  return out
}

function pingMessage (): Uint8Array {
  return writer().uint32(8).int32(PING).finish()
}

/**
 * Sends provider records for `multihashes` to one DHT server over one
 * stream, a window at a time. Resolves when the server has handled every
 * record; rejects on a failure, or when one step (a write, a window's
 * confirmation) takes longer than `stallMs`. `acknowledged` is called with
 * the number of records the server confirmed so far, after each window.
 */
export async function sendProviderRecords (libp2p: Pick<Libp2p, 'dialProtocol'>, peer: PeerId, protocol: string, multihashes: Uint8Array[], provider: Uint8Array, signal: AbortSignal, stallMs: number, acknowledged?: (n: number) => void): Promise<void> {
  const step = (): AbortSignal => AbortSignal.any([signal, AbortSignal.timeout(stallMs)])
  const stream = await libp2p.dialProtocol(peer, protocol, { signal: step() })
  try {
    const lp = lpStream(stream)
    for (let w = 0; w < multihashes.length; w += WINDOW) {
      const end = Math.min(w + WINDOW, multihashes.length)
      for (let i = w; i < end; i += WRITE_BATCH) {
        await lp.writeV(multihashes.slice(i, Math.min(i + WRITE_BATCH, end)).map(mh => addProviderMessage(mh, provider)), { signal: step() })
      }
      await lp.write(pingMessage(), { signal: step() })
      await lp.read({ signal: step() })
      acknowledged?.(end)
    }
    await stream.close({ signal: step() })
  } catch (err) {
    stream.abort(err as Error)
    throw err
  }
}
