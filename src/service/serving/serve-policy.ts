/**
 * May this block be served? One answer for every way content leaves the
 * node — the HTTP gateway and bitswap — so a peer cannot get over libp2p
 * what a browser cannot get over HTTP.
 *
 * In order:
 * 1. denials: rules that refuse a CID whatever else holds (the operator's
 *    denials and the denylists, service/serving/denials.ts: `denied`);
 *    no channel gets past them, and `refusal()` says why (the gateway
 *    answers 410 with it, writes 451). A rule is also asked about a path
 *    under a CID, for the gateway, which resolves paths (`refusal(cid,
 *    path)`); bitswap asks for blocks by CID alone;
 * 2. an identity CID of the raw codec carries its own bytes and links
 *    nowhere: nothing to hold, always allowed (the gateway bounds its size);
 * 3. the scope (--gateway-policy): `pinned`, the blocks of live pins, as
 *    the ledger has them (a replaced pin's blocks stay until its replacement
 *    settles); `blockstore`, any block held;
 * 4. the gateway's network read-through (--gateway-network-timeout) serves
 *    content it does not hold, so it may ask for anything not denied;
 *    bitswap only ever serves what is held.
 */
import type { CID } from 'multiformats/cid'
import type { ServableIndex } from './servable-blocks.js'

export type ServeScope = 'pinned' | 'blockstore'
export type ServeChannel = 'gateway' | 'bitswap'

/** Why a CID is refused, in words a client may read. */
export interface Refusal {
  message: string
}

/**
 * A refusal (or true) for a CID refused on every channel; `path`: a path
 * under it the gateway was asked for ('' for the CID itself).
 */
export type ServeDenial = (cid: CID, path: string) => Refusal | boolean | undefined

const RAW = 0x55
const IDENTITY = 0x00

export interface ServePolicyOptions {
  /** the ledger's answers, synchronous: asked for every block bitswap sends */
  pins: ServableIndex
  scope: ServeScope
  /** the gateway reads blocks it does not hold from the network */
  gatewayReadThrough?: boolean
  /** the rule no channel gets past */
  denied?: ServeDenial
}

export class ServePolicy {
  constructor (private readonly o: ServePolicyOptions) {}

  /** Why `cid` (or `path` under it) is refused on every channel; undefined when no rule refuses it. */
  refusal (cid: CID, path = ''): Refusal | undefined {
    const r = this.o.denied?.(cid, path)
    if (r === true) return { message: 'refused by this service' }
    if (r != null && r !== false) return r
    return undefined
  }

  mayServe (cid: CID, via: ServeChannel): boolean {
    if (this.o.denied != null && this.refusal(cid) != null) return false
    if (cid.multihash.code === IDENTITY && cid.code === RAW) return true
    if (this.o.scope === 'blockstore') return true
    if (via === 'gateway' && this.o.gatewayReadThrough === true) return true
    return this.o.pins.isPinnedBlock(cid) || this.o.pins.hasLivePin(cid)
  }
}
