/**
 * Carries out what a settled payment bought when its request died before
 * recording it. The settlement note holds what the request would have
 * recorded: a renewal extends its pin; a pin by CID (or a replacement) is
 * recorded with its payment,
 * in one transaction that also removes the note, and the fetcher takes it
 * from there; an upload's sealed staging folder, kept across the restart, is
 * checked block by block and committed first, under the commit lock as any
 * upload's (an upload whose blocks went straight to the store, S3, has each
 * one's presence there checked instead). The payer finds the pin under their wallet as if the request had
 * answered.
 *
 * The settlement transaction is the one whose AuthorizationUsed event the
 * chain shows (looked up by the caller); without it the records carry none.
 * A pin's retry window starts over from the time it is recorded.
 */
import { PindError } from '../../kernel/errors.js'
import { CID } from 'multiformats/cid'
import { blockName, type BlockBackend } from '../../ipfs/block-backend.js'
import type { CommitLock } from '../../ipfs/commit-lock.js'
import { UnusableImportError, type BlockStaging } from '../../ipfs/staging.js'
import { PinGoneError } from '../../ledger/errors.js'
import type { PinLedger } from '../../ledger/pins.js'
import type { SettlementFulfilment, SettlingRecord } from '../../ledger/settlements.js'
import type { Ledger } from '../../ledger/ledger.js'
import type { UploadTicket } from '../../ledger/tickets.js'
import type { PaymentRecord, PinRecord } from '../../ledger/records.js'
import { addMonths } from '../../ledger/clock.js'

export class CannotFulfilError extends PindError {
  override name = 'CannotFulfilError'
}

/** what a fulfilled note recorded: its pin, or (an upload ticket) the ticket's id as `requestid` */
export type Fulfilled = Pick<PinRecord, 'requestid' | 'cid'>

export interface FulfilDeps {
  ledger: Pick<PinLedger, 'create' | 'get' | 'payment' | 'paymentUsed' | 'renew'>
  /** for upload tickets: the ledger they are recorded in, with their payments */
  tickets?: Pick<Ledger, 'transaction'>
  /** for uploads: where their sealed imports wait, and the lock commits take */
  staging: Pick<BlockStaging, 'adopt' | 'commit' | 'discard'>
  /** for uploads whose blocks went straight to the store: where they are checked */
  blocks: Pick<BlockBackend, 'sizeOf'>
  lock: Pick<CommitLock, 'shared'>
}

/** Records the note's pin and payment; throws CannotFulfilError when that is not possible (an operator decides). */
export async function fulfilFromNote (d: FulfilDeps, note: SettlingRecord, tx?: string, now: Date = new Date()): Promise<Fulfilled> {
  const f = note.fulfil
  if (f == null) throw new CannotFulfilError('the note does not say what the payment bought (a note of an older version)')
  if (await d.ledger.paymentUsed(note.paymentId)) throw new CannotFulfilError('the payment is recorded already')
  if (f.renew != null) return await renew(d, note, f.renew, f, tx, now)
  if (f.ticket != null) return await ticket(d, note, f.ticket, f, tx, now)
  if (f.pin == null) throw new CannotFulfilError('the note does not say what the payment bought')
  const settledAt = now.toISOString()
  const draft = f.pin
  const retryMs = draft.fetch != null ? Date.parse(draft.fetch.giveUpAt) - Date.parse(draft.created) : undefined
  const pin: PinRecord = {
    ...draft,
    payment: { ...draft.payment, id: note.paymentId, payer: note.payer, amount: note.amount, settledAt, ...(tx != null ? { tx } : {}) },
    ...(draft.status === 'queued' ? { statusDetails: `${draft.statusDetails ?? 'queued for fetching'}; recorded after a restart (the payment was found settled on chain)` } : {}),
    ...(draft.fetch != null && retryMs != null && Number.isFinite(retryMs) ? { fetch: { ...draft.fetch, giveUpAt: new Date(now.getTime() + retryMs).toISOString() } } : {})
  }
  const record: PaymentRecord = {
    id: note.paymentId,
    requestid: pin.requestid,
    purpose: note.purpose,
    payer: note.payer,
    amount: note.amount,
    network: pin.payment.network,
    ...(tx != null ? { tx } : {}),
    at: settledAt,
    proof: f.proof
  }
  if (f.upload == null) {
    try {
      await d.ledger.create(pin, record)
    } catch (err) {
      if (err instanceof PinGoneError) throw new CannotFulfilError(`the pin it replaces (${err.requestid}) was removed meanwhile`)
      throw err
    }
    return pin
  }
  const upload = f.upload
  const blocks = upload.blocks.map(c => CID.parse(c))
  const staging = upload.staging
  await d.lock.shared(async () => {
    if (staging == null) await present(d.blocks, blocks)
    else {
      let staged
      try {
        staged = await d.staging.adopt(staging, blocks)
      } catch (err) {
        if (err instanceof UnusableImportError) throw new CannotFulfilError(`the upload's staged blocks cannot be used: ${err.message}`)
        throw err
      }
      await d.staging.commit(staged)
    }
    await d.ledger.create(pin, record, blocks)
  }, blocks)
  return pin
}

/** at once against the store (HEAD requests in S3) */
const PRESENCE_CHECKS = 8

/** Throws CannotFulfilError unless every block is in the store (the note held them from gc: none should be missing). */
async function present (store: Pick<BlockBackend, 'sizeOf'>, blocks: CID[]): Promise<void> {
  let next = 0
  const missing: CID[] = []
  await Promise.all(Array.from({ length: Math.min(PRESENCE_CHECKS, blocks.length) }, async () => {
    while (next < blocks.length) {
      const cid = blocks[next++] as CID
      if (await store.sizeOf({ name: blockName(cid) }) == null) missing.push(cid)
    }
  }))
  if (missing.length > 0) throw new CannotFulfilError(`${missing.length} of the upload's ${blocks.length} blocks are not in the block store (${missing[0]?.toString()} first)`)
}

/** Records a bought ticket with its payment (removing the payment's settlement note): one transaction. PaymentReusedError when the payment is recorded already. */
export async function recordTicket (ledger: Pick<Ledger, 'transaction'>, ticket: UploadTicket, payment: PaymentRecord): Promise<void> {
  await ledger.transaction(async (tx) => {
    await tx.recordPayment(payment)
    await tx.putTicket(ticket)
  })
}

/**
 * An upload ticket: recorded with its payment as its request would have
 * recorded it (its validity counted from its purchase, as the payer was told).
 */
async function ticket (d: FulfilDeps, note: SettlingRecord, t: UploadTicket, f: SettlementFulfilment, tx: string | undefined, now: Date): Promise<Fulfilled> {
  if (d.tickets == null) throw new CannotFulfilError('this command cannot record upload tickets')
  const record: PaymentRecord = {
    id: note.paymentId, requestid: t.id, purpose: note.purpose, payer: note.payer, amount: note.amount,
    network: t.network, ...(tx != null ? { tx } : {}), at: now.toISOString(), proof: f.proof
  }
  await recordTicket(d.tickets, { ...t, ...(tx != null ? { tx } : {}) }, record)
  return { requestid: t.id, cid: '(upload ticket)' }
}

/** A renewal: the pin is extended by the months paid for, from its end or from now, whichever is later. */
async function renew (d: FulfilDeps, note: SettlingRecord, r: { requestid: string, months: number }, f: SettlementFulfilment, tx: string | undefined, now: Date): Promise<PinRecord> {
  const current = await d.ledger.get(r.requestid)
  if (current == null) throw new CannotFulfilError(`the pin it renews (${r.requestid}) does not exist`)
  const record: PaymentRecord = {
    id: note.paymentId, requestid: r.requestid, purpose: note.purpose, payer: note.payer, amount: note.amount,
    // the network the renewal was paid on (notes of older versions: the pin's own)
    network: note.network ?? current.payment.network, ...(tx != null ? { tx } : {}), at: now.toISOString(), proof: f.proof
  }
  try {
    return await d.ledger.renew(r.requestid, r.months, record, (pin) => addMonths(new Date(Math.max(Date.parse(pin.pinnedUntil), now.getTime())), r.months))
  } catch (err) {
    if (err instanceof PinGoneError) throw new CannotFulfilError(`the pin it renews (${r.requestid}) was removed meanwhile`)
    throw err
  }
}

/** What a note that will not be fulfilled leaves on disk (an upload's kept staging folder) is removed. */
export async function releaseNote (staging: Pick<BlockStaging, 'discard'>, note: SettlingRecord): Promise<void> {
  const id = note.fulfil?.upload?.staging
  if (id != null) await staging.discard({ id })
}

/**
 * The two things reconciliation, `pind settlements close` and a retried
 * request (noted-retry.ts) do with notes, bound to a data dir: fulfil (a pin
 * recorded so wakes serve's fetcher through the ledger) and release. Fulfilments of one
 * payment run one after the other: the second finds the payment recorded
 * (a CannotFulfilError) rather than committing the same staged upload twice.
 */
export function settlementActions (d: FulfilDeps): {
  fulfil: (note: SettlingRecord, tx: string | undefined) => Promise<Fulfilled>
  release: (note: SettlingRecord) => Promise<void>
} {
  const running = new Map<string, Promise<unknown>>()
  return {
    fulfil: async (note, tx) => {
      const before = running.get(note.paymentId) ?? Promise.resolve()
      const p = before.catch(() => {}).then(async () => await fulfilFromNote(d, note, tx))
      running.set(note.paymentId, p)
      try {
        return await p
      } finally {
        if (running.get(note.paymentId) === p) running.delete(note.paymentId)
      }
    },
    release: async (note) => { await releaseNote(d.staging, note) }
  }
}

/** The staging folders that notes still need (kept by the start-up sweep). */
export function stagingInUse (notes: Iterable<SettlingRecord>): Set<string> {
  const keep = new Set<string>()
  for (const n of notes) if (n.fulfil?.upload?.staging != null) keep.add(n.fulfil.upload.staging)
  return keep
}

/** The blocks of uploads that notes may still record: gc keeps them (GcDeps.held). */
export function blocksHeld (notes: Iterable<SettlingRecord>): string[] {
  const blocks: string[] = []
  for (const n of notes) if (n.fulfil?.upload != null) blocks.push(...n.fulfil.upload.blocks)
  return blocks
}
