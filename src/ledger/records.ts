/**
 * The ledger's record types. Amounts are decimal strings of atomic units
 * (bigint on the way in and out); times are RFC 3339 UTC strings.
 */
import { CID } from 'multiformats/cid'

export type PinState = 'queued' | 'pinning' | 'pinned' | 'failed'

export interface PaymentInfo {
  /** `${payer}:${nonce}` — unique per x402 authorization */
  id: string
  payer: string
  amount: string
  network: string
  asset: string
  /** settlement transaction hash */
  tx?: string
  settledAt?: string
  /** 'x402' for paid writes; 'operator-token' for writes allowed by an operator-issued token */
  method: 'x402' | 'operator-token'
}

export interface PinRecord {
  requestid: string
  /** lowercase 0x address of the owner (the payer) */
  owner: string
  cid: string
  name?: string
  origins: string[]
  meta: Record<string, string>
  status: PinState
  statusDetails?: string
  /** RFC 3339 UTC with microseconds; unique and strictly increasing across the ledger */
  created: string
  /** microseconds since the epoch of `created` (sort key) */
  createdUs: number
  months: number
  pinnedUntil: string
  /** bytes of the whole DAG (blocks) when known */
  dagSize?: number
  /** bytes of file content (UnixFS) when known */
  fileSize?: number
  /** the most DAG bytes the payment covers (pins by CID) */
  maxBytes?: number
  source: 'upload' | 'pin'
  payment: PaymentInfo
  /** pins by CID: the background fetch's bookkeeping while queued or pinning */
  fetch?: FetchState
  /** a replacement (POST /pins/{requestid}): the pin it replaces, whose blocks stay referenced until this one settles */
  replaces?: string
  /** set on a replaced pin: the requestid that replaced it */
  replacedBy?: string
  /**
   * set when an operator took the pin down (`pind pins rm`): the pin is `failed`, its blocks
   * released, and the owner sees the reason in status_details until it would have expired
   */
  takedown?: { at: string, reason: string }
  /**
   * set when the owner unpinned or the pin was replaced/expired: the record stays, whole, for accounting
   * (the export carries every field), the owner's 404 and the replay of a paid retry of a replacement;
   * it is stored compact (./stored.ts), so there is no field whose dropping would pay
   */
  removed?: { at: string, why: 'unpinned' | 'replaced' | 'expired' }
}

export interface FetchState {
  attempts: number
  /** RFC 3339: after this the pin fails instead of retrying */
  giveUpAt: string
  /** RFC 3339: when a waiting pin is tried again */
  nextAttemptAt?: string
  lastError?: string
}

/** What a settled payment produced, so an honest retry gets the same answer. */
/** one owner's pins and payments, as GET /usage answers them (PinLedger.usage) */
export interface OwnerUsage {
  /** pins not removed, by status: live ones, and failed ones until they would have expired */
  pins: Record<PinState, number>
  /** DAG bytes of the pinned ones (a pin still fetching counts once it is pinned) */
  bytes: number
  /** atomic units of the asset paid per network (x402 payments by this wallet: pins, uploads, renewals, tickets) */
  spent: Record<string, bigint>
  /** ms since the epoch: the soonest pinned_until of a live pin, if any */
  nextExpiry?: number
}

export interface PaymentRecord {
  id: string
  requestid: string
  /** what the payment was for (route + subject), so it cannot be replayed on another request */
  purpose: string
  payer: string
  amount: string
  network: string
  tx?: string
  at: string
  /** sha256 of the signed authorization */
  proof: string
}

/**
 * Live: not removed, not failed, and paid for — pinned_until, plus the grace
 * period during which an expired pin is still kept, shown, served and
 * renewable before the sweeper marks it expired.
 */
export function isLive (pin: PinRecord, now: Date = new Date(), graceMs = 0): boolean {
  return pin.removed == null && pin.status !== 'failed' && Date.parse(pin.pinnedUntil) + graceMs > now.getTime()
}

/** Removed (unpinned, replaced, expired) or taken down by an operator: nothing may be fetched or pinned for it any more. */
export function withdrawn (pin: PinRecord): boolean {
  return pin.removed != null || pin.takedown != null
}

/** What the owner index keeps of a pin: the fields GET /pins filters on; of a removed pin, that it was removed. */
export type PinSummary = LiveSummary | RemovedSummary

/** a summary as a listing that filters on no CID reads it: a live one's CID may be left out (summariesByOwner's withCid) */
export type ListedSummary = (Omit<LiveSummary, 'cid'> & { cid?: string }) | RemovedSummary

/** a pin not removed */
export interface LiveSummary {
  id: string
  /** the root CID, v1 */
  cid: string
  status: PinRecord['status']
  /** pinned_until, ms since the epoch */
  until: number
  removed: false
  name?: string
  meta: Record<string, string>
}

/** what statesByOwner reads of a pin: its requestid, status and pinned_until (ms since the epoch) */
export type OwnerPinState = Pick<LiveSummary, 'id' | 'status' | 'until'>

/** a removed pin: every listing skips it, so the index keeps nothing else of it (most of a ledger's pins) */
export interface RemovedSummary {
  id: string
  removed: true
}

export function summaryOf (pin: PinRecord): PinSummary {
  if (pin.removed != null) return { id: pin.requestid, removed: true }
  return { id: pin.requestid, cid: CID.parse(pin.cid).toV1().toString(), status: pin.status, until: Date.parse(pin.pinnedUntil), removed: false, ...(pin.name != null ? { name: pin.name } : {}), meta: pin.meta }
}
