/**
 * POST /upload with X-Upload-Ticket: the upload a prepaid ticket
 * (upload-ticket.ts) paid for. Its payment is settled already, so nothing
 * stands between the body and the block store: each block is written there
 * while the body arrives (direct-import.ts), capped at the ticket's bytes as
 * it streams. Once every block is stored durably, the ticket's claim and
 * the pin are written in one ledger transaction (UploadTickets.claim): two
 * uploads with one ticket cannot both make a pin, and a second one while
 * the first is running is refused at once (409).
 *
 * Only the wallet that bought the ticket may use it (its wallet token,
 * 403 for another's). A failed upload (too large, the client gone, denied
 * content, invalid, the store unreachable) claims nothing: the ticket stays
 * usable, and before it answers it deletes the blocks it wrote that no pin
 * references (gc.ts removeUnreferenced). Each block is noted in a write
 * journal before it is written (write-journal.ts), so the blocks of an upload
 * a crash cut go the same way at the next start (recoverTicketWrites).
 *
 * What failed uploads wrote is added to the ticket's failedBytes (one
 * ledger transaction each): once it reaches --upload-ticket-retries times the
 * ticket's bytes, the ticket answers 410, so one ticket makes pind write at
 * most about (retries + 1) times what it paid for.
 */
import { ConflictError, ForbiddenError, GoneError, NotFoundError, UnavailableError } from '../../kernel/errors.js'
import { StorageTimeoutError, StorageUnavailableError, type BlockBackend } from '../../ipfs/block-backend.js'
import type { DirectImport, DirectImports } from '../../ipfs/direct-import.js'
import type { WriteJournal, WriteJournals } from '../../ipfs/write-journal.js'
import { TicketClaimError } from '../../ledger/errors.js'
import type { Ledger } from '../../ledger/ledger.js'
import type { PinLedger } from '../../ledger/pins.js'
import type { UploadTicket, UploadTickets } from '../../ledger/tickets.js'
import type { PinRecord } from '../../ledger/records.js'
import type { Logger } from '../../kernel/log.js'
import type { CID } from 'multiformats/cid'
import type { Slots } from './slots.js'
import type { Refusal } from '../serving/serve-policy.js'
import { importBody, MULTIPART_SLACK, refuseDenied, uploadBody, uploadedPin, type FileReader, type UploadOutcome } from './upload.js'

export interface TicketUploadDeps {
  ledger: Pick<PinLedger, 'payment' | 'nextCreated'>
  tickets: Pick<UploadTickets, 'check' | 'noteFailed'>
  /** the ledger a ticket's claim and the pin it makes are written to, in one transaction */
  records: Pick<Ledger, 'transaction'>
  /** imports whose blocks go straight to the block store */
  direct: Pick<DirectImports, 'begin'>
  /** each upload's list of the blocks it writes, for the start after a crash */
  journals?: Pick<WriteJournals, 'open'>
  /** deletes the blocks of a failed upload that nothing holds (gc.ts removeUnreferenced) */
  discard: (blocks: Array<{ cid: CID, bytes: number }>) => Promise<{ removed: number, freedBytes: number }>
  /** failed uploads with one ticket may write this many times its bytes in all (--upload-ticket-retries) */
  retries: number
  /** bytes a failed upload left in the store (its deletes failed): the next gc's */
  onLeftover?: (bytes: number) => void
  /** uploads streaming at once (--upload-concurrency), shared with paid uploads */
  slots: Pick<Slots, 'release' | 'size' | 'take'>
  publicUrl: string
  log: Logger
  refusal?: (cid: CID) => Refusal | undefined
  storage?: Pick<BlockBackend, 'writable'>
}

export interface TicketUploadInput {
  /** X-Upload-Ticket */
  ticket: string
  /** the wallet of the bearer token sent with it */
  owner: string
  file: FileReader
}

/** tickets with an upload running in this process: a second use is refused at once */
const running = new Set<string>()

export async function uploadWithTicket (input: TicketUploadInput, d: TicketUploadDeps): Promise<UploadOutcome> {
  const ticket = await checked(async () => await d.tickets.check(input.ticket, input.owner))
  if ((ticket.failedBytes ?? 0) >= d.retries * ticket.bytes) {
    throw new GoneError(`this upload ticket's failed uploads have written ${ticket.failedBytes ?? 0} bytes, ${d.retries} times its size, the most one ticket may; buy a new one with POST /upload/tickets`)
  }
  if (d.storage?.writable() === false) throw new StorageUnavailableError('the block storage is unreachable right now; retry shortly (your ticket was not used)')
  if (running.has(ticket.id)) throw new ConflictError('another upload is using this ticket right now; a ticket makes one pin')
  if (!d.slots.take()) throw new UnavailableError(`${d.slots.size} uploads are in progress, the most this server takes at once; retry shortly (your ticket was not used)`, 5)
  running.add(ticket.id)
  let journal: WriteJournal | undefined
  let imp: DirectImport | undefined
  let claimed = false
  /** a CAR's blocks its root does not reach: deleted once the upload lets go of them */
  let unreached: Array<{ cid: CID, bytes: number }> = []
  const t0 = performance.now()
  try {
    journal = await d.journals?.open(ticket.id)
    imp = d.direct.begin(journal)
    const imported = await importBody(input.file, imp, { maxFileBytes: ticket.bytes, maxBodyBytes: ticket.bytes + MULTIPART_SLACK })
    const importMs = Math.round(performance.now() - t0)
    // a CAR's pin holds the blocks its root reaches; the others it wrote are deleted once it is recorded
    const held = imported.reachable ?? imp.cids
    // denied content is refused as a paid upload's is; what it wrote is deleted below
    refuseDenied(imported.cid, held, d)
    // durable before the pin is recorded: every write has succeeded
    await imp.stored()
    const storedMs = Math.round(performance.now() - t0) - importMs
    const kept = new Set(held.map(String))
    const pin = await ticketPin(ticket, imported, imp.written.reduce((n, b) => kept.has(b.cid.toString()) ? n + b.bytes : n, 0), d)
    const blocks = [...kept]
    try {
      await d.records.transaction(async (tx) => {
        await tx.claimTicket(ticket.id, input.owner, pin.requestid)
        await tx.createPin(pin, undefined, blocks)
      })
      claimed = true
    } catch (err) {
      if (err instanceof TicketClaimError) throw answerTo(err)
      throw err
    }
    if (imported.reachable != null) unreached = imp.written.filter(b => !kept.has(b.cid.toString()))
    // importMs: the body received, hashed and its blocks handed to their writes; storedMs: the writes still running after that; the rest is the claim
    d.log.info('upload pinned with a ticket', { requestid: pin.requestid, cid: pin.cid, bytes: imported.fileSize, payer: ticket.payer, ticket: ticket.id, importMs, storedMs, ms: Math.round(performance.now() - t0) })
    return { replayed: false, result: uploadBody(pin, d, imported.files), location: `${d.publicUrl}/pins/${pin.requestid}` }
  } catch (err) {
    if (err instanceof StorageUnavailableError || err instanceof StorageTimeoutError) {
      throw new StorageUnavailableError('the block storage went away during the upload; your ticket was not used: retry shortly with it')
    }
    throw err
  } finally {
    try {
      // the blocks are the pin's now, or this failed upload's to delete
      await imp?.release()
      if (unreached.length > 0) await d.discard(unreached).catch(() => { /* left to the next gc */ })
      if (imp != null && !claimed) await discardFailed(ticket.id, imp, journal, d)
      // (a journal left behind names blocks a pin holds, or none: the next start finds nothing to delete)
      else await journal?.remove().catch((err: unknown) => { d.log.warn('could not remove an upload\'s write journal', { ticket: ticket.id, error: (err as Error).message }) })
    } finally {
      running.delete(ticket.id)
      d.slots.release()
    }
  }
}

/**
 * After a failed upload: its blocks that nothing holds are deleted, its
 * journal goes, and what it wrote counts against its ticket. When the deletes
 * fail (the store unreachable), the blocks are left to the next gc.
 */
async function discardFailed (ticketId: string, imp: DirectImport, journal: WriteJournal | undefined, d: TicketUploadDeps): Promise<void> {
  try {
    const r = await d.discard(imp.written)
    if (r.removed > 0) d.log.info('removed the blocks of a failed upload with a ticket', { ticket: ticketId, blocks: r.removed, bytes: r.freedBytes })
    // a write that failed may land after the delete (a PUT that timed out): the next gc's, if it does
    if (imp.failed) d.onLeftover?.(imp.bytes)
  } catch (err) {
    d.onLeftover?.(imp.bytes)
    d.log.warn('could not remove the blocks of a failed upload with a ticket: the next gc removes them', { ticket: ticketId, bytes: imp.bytes, error: (err as Error).message })
  }
  await journal?.remove().catch(() => {})
  await d.tickets.noteFailed(ticketId, imp.bytes).catch((err: unknown) => {
    d.log.warn('could not count a failed upload against its ticket', { ticket: ticketId, bytes: imp.bytes, error: (err as Error).message })
  })
}

export interface TicketWritesRecovery {
  journals: Pick<WriteJournals, 'left' | 'drop'>
  discard: TicketUploadDeps['discard']
  tickets: Pick<UploadTickets, 'noteFailed'>
  log: Logger
}

/**
 * At start, before anything is served: the uploads writing straight to the
 * store that a crash cut (with a ticket, or paid with S3 as the store: their
 * journal names no ticket), as their journals list them, are failed uploads:
 * their blocks that nothing holds (no pin, no settlement note) are deleted,
 * their bytes count against their tickets. A journal whose deletes fail stays
 * for the next start (gc removes its blocks meanwhile). Returns how many
 * uploads were recovered.
 */
export async function recoverTicketWrites (r: TicketWritesRecovery): Promise<number> {
  let n = 0
  for (const j of await r.journals.left()) {
    try {
      const gone = await r.discard(j.blocks)
      const bytes = j.blocks.reduce((sum, b) => sum + b.bytes, 0)
      if (j.ticket !== '') await r.tickets.noteFailed(j.ticket, bytes)
      await r.journals.drop(j)
      r.log.warn(`removed the blocks of ${j.ticket !== '' ? 'an upload with a ticket' : 'a paid upload'} that the last run left unfinished`, { ...(j.ticket !== '' ? { ticket: j.ticket } : {}), blocks: gone.removed, bytes: gone.freedBytes })
      n++
    } catch (err) {
      r.log.warn('could not remove the blocks of an unfinished upload: kept for the next start and gc', { ...(j.ticket !== '' ? { ticket: j.ticket } : {}), error: (err as Error).message })
    }
  }
  return n
}

/** The pin a ticket's upload records: pinned, paid by the ticket's payment. */
async function ticketPin (t: UploadTicket, imported: { cid: CID, fileSize: number, name?: string }, dagSize: number, d: TicketUploadDeps): Promise<PinRecord> {
  const [paid, created] = await Promise.all([d.ledger.payment(t.paymentId), d.ledger.nextCreated()])
  return uploadedPin(t.payer, t.months, imported, dagSize, {
    id: t.paymentId, payer: t.payer, amount: t.amount, network: paid?.network ?? t.network, asset: t.asset, method: 'x402',
    ...(paid?.tx ?? t.tx) != null ? { tx: paid?.tx ?? t.tx } : {},
    settledAt: paid?.at ?? t.createdAt
  }, created)
}

async function checked<T> (fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof TicketClaimError) throw answerTo(err)
    throw err
  }
}

function answerTo (err: TicketClaimError): Error {
  switch (err.why) {
    case 'unknown': return new NotFoundError(`${err.message} (buy one with POST /upload/tickets)`)
    case 'not-owner': return new ForbiddenError(err.message)
    case 'used': return new ConflictError(`${err.message}; a ticket makes one pin`)
    case 'expired': return new GoneError(`${err.message}; buy a new one with POST /upload/tickets`)
  }
}
