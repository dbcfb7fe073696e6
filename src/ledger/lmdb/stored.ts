/**
 * What the pins, pins-by-owner and payments databases store of a record, and
 * how a record is read back whole. Each paid write leaves these records for
 * good (a removed pin stays for accounting), and lmdb maps the file, so every
 * byte stored per write is resident memory in a long-running serve.
 * So a record is stored compact:
 *   - as an array of its fields' values in a fixed order (first element: the
 *     layout's version), not a map that repeats every field name;
 *   - a removed pin's owner-index summary as only that (listings skip it;
 *     PinLedger now removes the entry, an older ledger's is read so);
 *   - a pin's removal as 9 bytes that are there, zero, from the start: removing
 *     a pin then rewrites its record at the same size. A record that grows
 *     splits its B-tree page when that is full, and most pins are removed
 *     some time after they were written: with a removal that grew the record
 *     by ~45 bytes the pins database's pages were 54% full, 81% without;
 *   - hex strings (addresses, transaction hashes, nonces, proofs), CIDs and
 *     UUIDs as their bytes, when the bytes give back exactly the same string;
 *   - a pin's payment's asset (the token paid in: the same for nearly every
 *     pin) as its index in a table of assets the ledger keeps (a meta fact);
 *   - a pin's status, source and payment method as small numbers (their
 *     index in STATUSES, SOURCES, METHODS; pins written before keep the names,
 *     which read as they are): a status change no longer changes the size;
 *   - without what the ledger holds elsewhere: no field equal to its own key
 *     (a pin's requestid, a summary's id, a payment's id), a pin's `created`
 *     only when its `createdUs` does not give it, a payment's payer only when
 *     its id (`payer:nonce`) does not start with it;
 *   - a pin's payment, when the payments database holds the record of that
 *     payment with the same payer, amount, network, transaction and time, as
 *     its id, asset and method only: the rest is read from that record. A pin
 *     whose payment has no such record (an operator-token pin, a pin imported
 *     before its payment) keeps the whole of it.
 * (The CID index, PinLedger's byCid, keeps no value either: its key is the entry.
 * Neither it nor the owner index holds a removed pin.)
 * Records written before this (maps, with their keys) read as they are; the
 * `compact:records` upgrade rewrites them (PinLedger.upgrade).
 *
 * Payments (layout 2: the payments database was half of what each
 * paid write left). An x402 payment's id `0x<payer>:0x<nonce>` is the key as
 * its 52 bytes (payer, nonce) in their own database (`payments-binary`,
 * paymentKey), in the same order as the ids' text; any other id stays text in
 * `payments`. The record then keeps: its requestid (bytes), its purpose coded
 * (a kind and its parts: a CID as bytes, or nothing when it is the CID of the
 * pin the payment paid for; a requestid as bytes, or nothing when it is the
 * payment's own; months and times as numbers), its time as milliseconds when
 * they spell it exactly, the rest as before. A purpose or time that would not
 * read back as the very same string stays a string. Layout-1 records (and
 * maps) read as they are; the `compact:payment-keys` upgrade moves them.
 */
import { CID } from 'multiformats/cid'
import { isoMicros } from '../clock.js'
import type { ListedSummary, LiveSummary, PinSummary } from './summaries.js'
import type { PaymentInfo, PaymentRecord, PinRecord } from '../records.js'

const LAYOUT = 1
/** the payments' layout (see the header); layout 1 payments still read */
const PAYMENT_LAYOUT = 2

/**
 * a pin's payment as stored when the payments database holds its record: [id, asset, method]; an id
 * `owner:0x<nonce>` as the nonce's bytes, the asset as its index in the ledger's table of assets
 * (PinLedger: a meta fact; older records: its bytes), the method as its index in METHODS (older records: its name)
 */
type PaymentRef = [string | Uint8Array, string | Uint8Array | number, PaymentInfo['method'] | number]

/** the ledger's table of assets: an asset's index (added to the table when new, inside the writing transaction), and the asset at an index */
export interface AssetTable {
  indexOf: (asset: string) => number
  at: (index: number) => string | undefined
}

/** a pin's status, source and payment method as their index here (records written before: as their names, which still read) */
const STATUSES = ['queued', 'pinning', 'pinned', 'failed'] as const
const SOURCES = ['upload', 'pin'] as const
const METHODS = ['x402', 'operator-token'] as const

function packEnum (names: readonly string[], v: string): number | string {
  const i = names.indexOf(v)
  return i >= 0 ? i : v
}
function readEnum<T extends string> (names: readonly T[], v: unknown): T {
  return typeof v === 'number' ? names[v] as T : v as T
}

/** a stored record: the layout's array, or a map as older versions wrote it */
export type StoredPin = unknown[] | PinRecord
export type StoredPayment = unknown[] | PaymentRecord
export type StoredSummary = unknown[] | (Omit<LiveSummary, 'removed'> & { removed: boolean })

const PIN_FIELDS = ['owner', 'cid', 'name', 'origins', 'meta', 'status', 'statusDetails', 'created', 'createdUs', 'months', 'pinnedUntil',
  'dagSize', 'fileSize', 'maxBytes', 'source', 'payment', 'fetch', 'replaces', 'replacedBy', 'takedown', 'removed'] as const
const SUMMARY_FIELDS = ['removed', 'cid', 'status', 'until', 'name', 'meta'] as const
const PAYMENT_FIELDS = ['requestid', 'purpose', 'payer', 'amount', 'network', 'tx', 'at', 'proof'] as const

// every field is stored (or is the key): adding one to a record without a place here fails the typecheck
type Covered<T extends never> = T
export type AllFieldsStored = [
  Covered<Exclude<keyof PinRecord, typeof PIN_FIELDS[number] | 'requestid'>>,
  Covered<Exclude<keyof LiveSummary, typeof SUMMARY_FIELDS[number] | 'id'>>,
  Covered<Exclude<keyof PaymentRecord, typeof PAYMENT_FIELDS[number] | 'id'>>
]

/** the layout's array: absent values as null, trailing ones left off */
function pack (values: unknown[]): unknown[] {
  const out = [LAYOUT, ...values.map(v => v ?? null)]
  while (out.length > 1 && out[out.length - 1] === null) out.pop()
  return out
}

/** the fields of a layout array (null: absent) */
function unpack (fields: readonly string[], arr: unknown[], layouts: readonly number[] = [LAYOUT]): Record<string, unknown> {
  if (!layouts.includes(arr[0] as number)) throw new Error(`ledger: a record in layout ${String(arr[0])}; this pind reads layout ${layouts.join(' and ')}`)
  const out: Record<string, unknown> = {}
  fields.forEach((f, i) => { const v = arr[i + 1]; if (v != null) out[f] = v })
  return out
}

// ---- strings as bytes, only when the bytes give back the very same string ----

const HEX0X = /^0x(?:[0-9a-f]{2})+$/
const HEX = /^(?:[0-9a-f]{2})+$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

function bytesOf (v: unknown): Buffer | undefined {
  if (Buffer.isBuffer(v)) return v
  return v instanceof Uint8Array ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : undefined
}

/** lowercase 0x-hex (an address, a transaction hash) */
function packHex0x (s: string | undefined): string | Uint8Array | undefined {
  return s != null && HEX0X.test(s) ? Buffer.from(s.slice(2), 'hex') : s
}
function readHex0x (v: unknown): unknown {
  const b = bytesOf(v)
  return b != null ? `0x${b.toString('hex')}` : v
}

/** lowercase hex without a prefix (a proof) */
function packHex (s: string | undefined): string | Uint8Array | undefined {
  return s != null && HEX.test(s) ? Buffer.from(s, 'hex') : s
}
function readHex (v: unknown): unknown {
  const b = bytesOf(v)
  return b != null ? b.toString('hex') : v
}

/** a CID in its canonical string form (v0 base58btc, v1 base32) */
function packCid (s: string | undefined): string | Uint8Array | undefined {
  if (s == null) return s
  try {
    const cid = CID.parse(s)
    return cid.toString() === s ? cid.bytes : s
  } catch {
    return s
  }
}
export function readCid (v: unknown): unknown {
  const b = bytesOf(v)
  if (b == null) return v
  // a CIDv1's string is 'b' and its bytes in base32 (packCid stored only CIDs whose string is that):
  // written here directly, it costs a tenth of decoding the CID and encoding it (every pin read, and
  // every payment whose purpose names its pin's CID)
  return b[0] === 1 ? `b${base32(b)}` : CID.decode(b).toString()
}

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567'

/** RFC 4648 base32, lowercase, unpadded (multibase 'b') */
function base32 (b: Uint8Array): string {
  let out = ''
  let bits = 0
  let value = 0
  for (const x of b) {
    value = (value << 8) | x
    bits += 8
    while (bits >= 5) {
      bits -= 5
      out += BASE32[(value >>> bits) & 31] as string
    }
    value &= (1 << bits) - 1
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31] as string
  return out
}

/** a lowercase UUID (a requestid) */
function packUuid (s: string | undefined): string | Uint8Array | undefined {
  return s != null && UUID.test(s) ? Buffer.from(s.replaceAll('-', ''), 'hex') : s
}
function readUuid (v: unknown): unknown {
  const b = bytesOf(v)
  if (b == null) return v
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

// ---- a pin's removal: 8 bytes of milliseconds (big-endian) and a byte for why; all zero while not removed ----

const REMOVED_WHY = ['unpinned', 'replaced', 'expired'] as const

function packRemoved (r: PinRecord['removed']): Uint8Array | PinRecord['removed'] {
  const b = Buffer.alloc(9)
  if (r == null) return b
  const ms = Date.parse(r.at)
  const why = REMOVED_WHY.indexOf(r.why)
  // a time the milliseconds do not spell exactly (an imported record) stays as it is
  if (!Number.isFinite(ms) || ms < 0 || new Date(ms).toISOString() !== r.at || why < 0) return r
  b.writeBigUInt64BE(BigInt(ms), 0)
  b[8] = why + 1
  return b
}

function readRemoved (v: unknown): PinRecord['removed'] {
  const b = bytesOf(v)
  if (b == null) return v as PinRecord['removed']
  const why = b[8] ?? 0
  if (why === 0) return undefined
  return { at: new Date(Number(b.readBigUInt64BE(0))).toISOString(), why: REMOVED_WHY[why - 1] as NonNullable<PinRecord['removed']>['why'] }
}

/** Does this payments record say all that the pin's copy says (so the pin need keep only its id)? */
function recordCovers (pay: PaymentInfo, rec: PaymentRecord | undefined): boolean {
  return rec != null && rec.id === pay.id && rec.payer === pay.payer && rec.amount === pay.amount &&
    rec.network === pay.network && rec.tx === pay.tx && pay.settledAt != null && rec.at === pay.settledAt
}

/** A pin as it is stored: `rec` is the payments database's record of its payment, if there is one. */
export function storePin (pin: PinRecord, rec: PaymentRecord | undefined, assets?: AssetTable): StoredPin {
  const pay = pin.payment
  const until = Date.parse(pin.pinnedUntil)
  return pack(PIN_FIELDS.map(f => {
    switch (f) {
      case 'payment': return recordCovers(pay, rec) ? [shortId(pay.id, pin.owner), assets != null && HEX0X.test(pay.asset) ? assets.indexOf(pay.asset) : packHex0x(pay.asset), packEnum(METHODS, pay.method)] as PaymentRef : pay
      case 'status': return packEnum(STATUSES, pin.status)
      case 'source': return packEnum(SOURCES, pin.source)
      case 'owner': return packHex0x(pin.owner)
      case 'removed': return packRemoved(pin.removed)
      case 'cid': return packCid(pin.cid)
      case 'created': return isoMicros(pin.createdUs) === pin.created ? undefined : pin.created
      case 'pinnedUntil': return Number.isFinite(until) && new Date(until).toISOString() === pin.pinnedUntil ? until : pin.pinnedUntil
      default: return pin[f]
    }
  }))
}

/** a payment id `owner:0x<nonce>` (x402: `payer:nonce`, and the payer owns the pin) as the nonce's bytes; any other as it is */
function shortId (id: string, owner: string): string | Uint8Array {
  const nonce = id.startsWith(`${owner}:`) ? packHex0x(id.slice(owner.length + 1)) : undefined
  return nonce instanceof Uint8Array ? nonce : id
}

function fullId (id: unknown, owner: string): string {
  const b = bytesOf(id)
  return b != null ? `${owner}:0x${b.toString('hex')}` : id as string
}

/** Is this a pin stored as an array whose status is still its name (written before statuses, sources, methods and assets were numbers)? */
export function pinWithNames (stored: StoredPin): boolean {
  return Array.isArray(stored) && typeof stored[PIN_FIELDS.indexOf('status') + 1] === 'string'
}

/** Is this stored pin's payment only a reference to its record (or a map as older versions wrote it)? */
export function paymentByRef (stored: StoredPin): boolean {
  return Array.isArray(stored) && Array.isArray(stored[PIN_FIELDS.indexOf('payment') + 1])
}

/** a stored pin's `created`, in microseconds */
export function createdUsOf (stored: StoredPin): number {
  return Array.isArray(stored) ? stored[PIN_FIELDS.indexOf('createdUs') + 1] as number : stored.createdUs
}

/** the payment id a stored pin refers to or holds */
export function paymentIdOf (stored: StoredPin): string {
  if (!Array.isArray(stored)) return stored.payment.id
  const pay = stored[PIN_FIELDS.indexOf('payment') + 1] as PaymentRef | PaymentInfo
  return Array.isArray(pay) ? fullId(pay[0], readHex0x(stored[PIN_FIELDS.indexOf('owner') + 1]) as string) : pay.id
}

/** A stored pin, whole again: `payment` reads a payment record (given this pin's CID, which the record's purpose may name: no second read of the pin). */
export function readPin (requestid: string, stored: StoredPin, payment: (id: string, pinCid: string) => PaymentRecord | undefined, assets?: AssetTable): PinRecord {
  if (!Array.isArray(stored)) return { ...stored, requestid }
  const f = unpack(PIN_FIELDS, stored)
  f.owner = readHex0x(f.owner)
  f.cid = readCid(f.cid)
  f.status = readEnum(STATUSES, f.status)
  f.source = readEnum(SOURCES, f.source)
  const removed = readRemoved(f.removed)
  if (removed == null) delete f.removed
  else f.removed = removed
  if (f.created == null) f.created = isoMicros(f.createdUs as number)
  if (typeof f.pinnedUntil === 'number') f.pinnedUntil = new Date(f.pinnedUntil).toISOString()
  if (Array.isArray(f.payment)) {
    const [short, packedAsset, packedMethod] = f.payment as PaymentRef
    const method = readEnum(METHODS, packedMethod)
    const id = fullId(short, f.owner as string)
    const asset = typeof packedAsset === 'number' ? assets?.at(packedAsset) : readHex0x(packedAsset) as string
    if (asset == null) throw new Error(`ledger: pin ${requestid} names asset ${String(packedAsset)} of the ledger's table of assets, which does not hold it`)
    const rec = payment(id, f.cid as string)
    // the ledger never removes a payment record; a pin that refers to one that is not there is a broken ledger
    if (rec == null) throw new Error(`ledger: pin ${requestid} refers to payment ${id}, which the ledger does not hold`)
    f.payment = { id, payer: rec.payer, amount: rec.amount, network: rec.network, asset, ...(rec.tx != null ? { tx: rec.tx } : {}), settledAt: rec.at, method } satisfies PaymentInfo
  }
  return { requestid, ...f } as unknown as PinRecord
}

// ---- payments (layout 2) ----

const PAYMENT_ID = /^0x[0-9a-f]{40}:0x[0-9a-f]{64}$/

/** an x402 payment id (`0x<payer>:0x<nonce>`, lowercase) as the key of payments-binary: payer and nonce, 52 bytes; undefined for any other id */
export function paymentKey (id: string): Buffer | undefined {
  return PAYMENT_ID.test(id) ? Buffer.from(id.slice(2, 42) + id.slice(45), 'hex') : undefined
}

export function paymentIdOfKey (key: Uint8Array): string {
  const b = bytesOf(key) as Buffer
  return `0x${b.subarray(0, 20).toString('hex')}:0x${b.subarray(20).toString('hex')}`
}

/** a time as milliseconds when they spell it exactly (toISOString), else the string */
function packTime (s: string): string | number {
  const ms = Date.parse(s)
  return Number.isFinite(ms) && ms >= 0 && new Date(ms).toISOString() === s ? ms : s
}
function readTime (v: unknown): string {
  return typeof v === 'number' ? new Date(v).toISOString() : v as string
}

/**
 * A payment's purpose (pin-create.ts, upload.ts, pin-renew.ts) as a kind and
 * its parts. A CID part is null when it is `pinCid` (the CID of the pin the
 * payment paid for), a requestid part null when it is the payment's own.
 */
const PURPOSE_KINDS = ['upload', 'pin', 'replace', 'renew'] as const
const PURPOSE_PARTS: Record<typeof PURPOSE_KINDS[number], ReadonlyArray<'cid' | 'requestid' | 'months' | 'time'>> = {
  upload: ['cid'],
  pin: ['cid', 'months'],
  replace: ['requestid', 'cid', 'months'],
  renew: ['requestid', 'months', 'time']
}

function packPurpose (purpose: string, requestid: string, pinCid: string | undefined): unknown {
  const colon = purpose.indexOf(':')
  const kind = PURPOSE_KINDS.indexOf(purpose.slice(0, colon) as typeof PURPOSE_KINDS[number])
  if (colon < 0 || kind < 0) return purpose
  const parts = PURPOSE_PARTS[PURPOSE_KINDS[kind] as typeof PURPOSE_KINDS[number]]
  // the time (renew's pinned_until) is last and may itself hold colons
  const texts = purpose.slice(colon + 1).split(':')
  if (texts.length < parts.length) return purpose
  if (texts.length > parts.length) texts.splice(parts.length - 1, texts.length, texts.slice(parts.length - 1).join(':'))
  const packed: unknown[] = [kind + 1, ...parts.map((part, i) => {
    const t = texts[i] as string
    switch (part) {
      case 'cid': return t === pinCid ? null : packCid(t)
      case 'requestid': return t === requestid ? null : packUuid(t)
      case 'months': return /^[1-9]\d{0,8}$/.test(t) ? Number(t) : t
      case 'time': return packTime(t)
    }
  })]
  // only what reads back as the very same string
  return readPurpose(packed, requestid, () => pinCid) === purpose ? packed : purpose
}

function readPurpose (v: unknown, requestid: string, pinCid: () => string | undefined): string {
  if (!Array.isArray(v)) return v as string
  const kind = PURPOSE_KINDS[(v[0] as number) - 1]
  if (kind == null) throw new Error(`ledger: a payment purpose of kind ${String(v[0])}, which this pind does not know`)
  const texts = PURPOSE_PARTS[kind].map((part, i) => {
    const x = v[i + 1]
    switch (part) {
      case 'cid': {
        if (x != null) return readCid(x) as string
        const cid = pinCid()
        // the ledger never removes a pin; a payment whose pin is not there is a broken ledger
        if (cid == null) throw new Error(`ledger: a payment for ${requestid} names its pin's CID, and the ledger holds no such pin`)
        return cid
      }
      case 'requestid': return x == null ? requestid : readUuid(x) as string
      case 'months': return String(x)
      case 'time': return readTime(x)
    }
  })
  return `${kind}:${texts.join(':')}`
}

/**
 * A payment as it is stored (layout 2): `pinCid` is the CID of the pin it paid
 * for (p.requestid), when the ledger holds that pin or it is written in the
 * same transaction. The payer is left out when the id starts with it.
 */
export function storePayment (p: PaymentRecord, pinCid?: string): StoredPayment {
  const out: unknown[] = [PAYMENT_LAYOUT, ...PAYMENT_FIELDS.map(f => {
    switch (f) {
      case 'payer': return p.id.startsWith(`${p.payer}:`) ? undefined : packHex0x(p.payer)
      case 'requestid': return packUuid(p.requestid)
      case 'purpose': return packPurpose(p.purpose, p.requestid, pinCid)
      case 'tx': return packHex0x(p.tx)
      case 'at': return packTime(p.at)
      case 'proof': return packHex(p.proof)
      default: return p[f]
    }
  }).map(v => v ?? null)]
  while (out.length > 1 && out[out.length - 1] === null) out.pop()
  return out
}

/** A stored payment, whole again: `pinCid` gives the CID of the pin it paid for (read only when the purpose names it). */
export function readPayment (id: string, stored: StoredPayment, pinCid: (requestid: string) => string | undefined = () => undefined): PaymentRecord {
  if (!Array.isArray(stored)) return { ...stored, id }
  const f = unpack(PAYMENT_FIELDS, stored, [LAYOUT, PAYMENT_LAYOUT])
  f.payer = f.payer == null ? id.slice(0, id.indexOf(':')) : readHex0x(f.payer)
  f.requestid = readUuid(f.requestid)
  const requestid = f.requestid as string
  f.purpose = readPurpose(f.purpose, requestid, () => pinCid(requestid))
  if (f.tx != null) f.tx = readHex0x(f.tx)
  f.at = readTime(f.at)
  f.proof = readHex(f.proof)
  return { id, ...f } as unknown as PaymentRecord
}

/** Is this payment stored in the layout this pind writes? */
export function currentPaymentLayout (stored: StoredPayment): boolean {
  return Array.isArray(stored) && stored[0] === PAYMENT_LAYOUT
}

/**
 * The CID of a pin from its stored bytes, without decoding the rest of the
 * record (a payment's purpose names it: the export reads one per payment):
 * a layout array whose owner and CID are bytes is [array header, 1, bin8
 * owner, bin8 CID, …] in msgpack. Undefined for anything else (then decode
 * the record: cidOf).
 */
export function cidOfPacked (b: Uint8Array): string | undefined {
  let i: number
  if (b[0] === 0xdc) i = 3 // array 16
  else if (b[0] != null && b[0] >= 0x90 && b[0] <= 0x9f) i = 1 // fixarray
  else return undefined
  if (b[i] !== LAYOUT || b[i + 1] !== 0xc4) return undefined
  i += 3 + (b[i + 2] as number)
  if (b[i] !== 0xc4 || i + 2 > b.length) return undefined
  const end = i + 2 + (b[i + 1] as number)
  if (end > b.length) return undefined
  try {
    return readCid(b.subarray(i + 2, end)) as string
  } catch {
    return undefined
  }
}

/** the CID of a stored pin */
export function cidOf (stored: StoredPin): string {
  return Array.isArray(stored) ? readCid(stored[PIN_FIELDS.indexOf('cid') + 1]) as string : stored.cid
}

/** a removed pin's summary is [layout, true]; a live one's [layout, false, cid, status, until, name, meta] */
export function storeSummary (s: PinSummary): StoredSummary {
  if (s.removed) return pack([true])
  return pack(SUMMARY_FIELDS.map(f => f === 'cid' ? packCid(s.cid) : s[f]))
}

/**
 * A stored summary, read. `withCid` false leaves its CID out (a listing that
 * filters on no CID reads every summary of its owner, and writing each CID as
 * a string cost it more than the rest of the summary).
 */
export function readSummary (id: string, stored: StoredSummary): PinSummary
export function readSummary (id: string, stored: StoredSummary, withCid: boolean): ListedSummary
export function readSummary (id: string, stored: StoredSummary, withCid = true): ListedSummary {
  // older versions kept a removed pin's whole summary: what is read of it is that it was removed
  if (!Array.isArray(stored)) return stored.removed ? { id, removed: true } : { ...stored, id, removed: false }
  // read field by field (SUMMARY_FIELDS' order), not through unpack: a listing reads every summary of its owner
  if (stored[0] !== LAYOUT) unpack(SUMMARY_FIELDS, stored)
  if (stored[1] === true) return { id, removed: true }
  const s = { id, removed: false } as LiveSummary
  const [, , cid, status, until, name, meta] = stored
  if (cid != null && withCid) s.cid = readCid(cid) as string
  if (status != null) s.status = status as LiveSummary['status']
  if (until != null) s.until = until as number
  if (name != null) s.name = name as string
  if (meta != null) s.meta = meta as Record<string, string>
  return s
}

const STATES: ReadonlyMap<string, LiveSummary['status']> = new Map((['queued', 'pinning', 'pinned', 'failed'] as const).map(s => [s, s]))

/**
 * A stored summary's removal, status and pinned_until read from its msgpack
 * bytes, nothing else decoded (a listing that filters on these alone reads
 * every summary of its owner: decoding each whole cost most of its time).
 * `removed` for a removed pin; undefined for bytes not in the shape
 * storeSummary writes (an older layout, an unexpected encoding): decode them.
 */
export type SummaryState = { status: LiveSummary['status'], until: number } | 'removed' | 'undecoded'

/** `size`: the bytes' length, when `bytes` is longer (lmdb's buffer, read in place) */
export function summaryStateOf (bytes: Uint8Array, size = bytes.length): Exclude<SummaryState, 'undecoded'> | undefined {
  const b = bytesOf(bytes) as Buffer
  const end = Math.min(size, b.length)
  let i: number
  const h = b[0] as number
  if (h >= 0x92 && h <= 0x9f) i = 1 // fixarray
  else if (h === 0xdc) i = 3 // array 16
  else return undefined
  if (i + 2 > end || b[i++] !== LAYOUT) return undefined
  const removed = b[i++]
  if (removed === 0xc3) return 'removed'
  if (removed !== 0xc2 || i + 2 > end) return undefined
  // the CID: bytes (bin 8), or a string (fixstr, str 8)
  const c = b[i] as number
  if (c === 0xc4 || c === 0xd9) i += 2 + (b[i + 1] as number)
  else if (c >= 0xa0 && c <= 0xbf) i += 1 + (c & 0x1f)
  else return undefined
  if (i >= end) return undefined
  const s = b[i] as number
  if (s < 0xa0 || s > 0xbf || i + 1 + (s & 0x1f) >= end) return undefined
  const status = STATES.get(b.toString('latin1', i + 1, i + 1 + (s & 0x1f)))
  if (status == null) return undefined
  i += 1 + (s & 0x1f)
  const until = numberAt(b, i, end)
  return until == null ? undefined : { status, until }
}

/** the msgpack number at `i` (before `end`), in the forms a time in ms may take; undefined for any other */
function numberAt (b: Buffer, i: number, end: number): number | undefined {
  if (i >= end) return undefined
  const t = b[i] as number
  if (t <= 0x7f) return t
  const room = end - i - 1
  switch (t) {
    case 0xcb: return room >= 8 ? b.readDoubleBE(i + 1) : undefined
    case 0xca: return room >= 4 ? b.readFloatBE(i + 1) : undefined
    case 0xcc: return room >= 1 ? b.readUInt8(i + 1) : undefined
    case 0xcd: return room >= 2 ? b.readUInt16BE(i + 1) : undefined
    case 0xce: return room >= 4 ? b.readUInt32BE(i + 1) : undefined
    case 0xcf: return room >= 8 ? Number(b.readBigUInt64BE(i + 1)) : undefined
    case 0xd3: return room >= 8 ? Number(b.readBigInt64BE(i + 1)) : undefined
    default: return undefined
  }
}

/** Is this a record as older versions wrote it (a map)? */
export function oldLayout (stored: StoredPin | StoredPayment | StoredSummary): boolean {
  return !Array.isArray(stored)
}
