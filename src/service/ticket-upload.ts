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
 * content, the store unreachable) claims nothing: the ticket stays usable,
 * and the blocks it wrote are swept by the next gc. So does a crash.
 */
import { ConflictError, ForbiddenError, GoneError, NotFoundError, UnavailableError } from '../errors.js'
import { StorageTimeoutError, StorageUnavailableError, type BlockBackend } from '../ipfs/block-backend.js'
import type { DirectImports } from '../ipfs/direct-import.js'
import type { PinLedger } from '../ledger/pins.js'
import type { PinRecord } from '../ledger/records.js'
import { TicketClaimError, type UploadTicket, type UploadTickets } from '../ledger/tickets.js'
import type { Logger } from '../log.js'
import type { CID } from 'multiformats/cid'
import type { Slots } from './slots.js'
import type { Refusal } from './serve-policy.js'
import { importBody, MULTIPART_SLACK, refuseDenied, uploadBody, uploadedPin, type FileReader, type UploadOutcome } from './upload.js'

export interface TicketUploadDeps {
  ledger: Pick<PinLedger, 'payment'>
  tickets: Pick<UploadTickets, 'check' | 'claim'>
  /** imports whose blocks go straight to the block store */
  direct: Pick<DirectImports, 'begin'>
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
  const ticket = checked(() => d.tickets.check(input.ticket, input.owner))
  if (d.storage?.writable() === false) throw new StorageUnavailableError('the block storage is unreachable right now; retry shortly (your ticket was not used)')
  if (running.has(ticket.id)) throw new ConflictError('another upload is using this ticket right now; a ticket makes one pin')
  if (!d.slots.take()) throw new UnavailableError(`${d.slots.size} uploads are in progress, the most this server takes at once; retry shortly (your ticket was not used)`, 5)
  running.add(ticket.id)
  const imp = d.direct.begin()
  const t0 = performance.now()
  try {
    const imported = await importBody(input.file, imp, { maxFileBytes: ticket.bytes, maxBodyBytes: ticket.bytes + MULTIPART_SLACK })
    const importMs = Math.round(performance.now() - t0)
    // denied content is refused as a paid upload's is; what it wrote is garbage for the next gc
    refuseDenied(imported.cid, imp.cids, d)
    // durable before the pin is recorded: every write has succeeded
    await imp.stored()
    const storedMs = Math.round(performance.now() - t0) - importMs
    const pin = ticketPin(ticket, imported, imp.bytes, d)
    try {
      await d.tickets.claim(ticket.id, input.owner, pin, imp.cids.map(String))
    } catch (err) {
      if (err instanceof TicketClaimError) throw answerTo(err)
      throw err
    }
    // importMs: the body received, hashed and its blocks handed to their writes; storedMs: the writes still running after that; the rest is the claim
    d.log.info('upload pinned with a ticket', { requestid: pin.requestid, cid: pin.cid, bytes: imported.fileSize, payer: ticket.payer, ticket: ticket.id, importMs, storedMs, ms: Math.round(performance.now() - t0) })
    return { replayed: false, result: uploadBody(pin, d), location: `${d.publicUrl}/pins/${pin.requestid}` }
  } catch (err) {
    if (err instanceof StorageUnavailableError || err instanceof StorageTimeoutError) {
      throw new StorageUnavailableError('the block storage went away during the upload; your ticket was not used: retry shortly with it')
    }
    throw err
  } finally {
    // the blocks are the pin's now (or garbage): gc may judge them again
    await imp.release()
    running.delete(ticket.id)
    d.slots.release()
  }
}

/** The pin a ticket's upload records: pinned, paid by the ticket's payment. */
function ticketPin (t: UploadTicket, imported: { cid: CID, fileSize: number, name?: string }, dagSize: number, d: TicketUploadDeps): PinRecord {
  const paid = d.ledger.payment(t.paymentId)
  return uploadedPin(t.payer, t.months, imported, dagSize, {
    id: t.paymentId, payer: t.payer, amount: t.amount, network: paid?.network ?? t.network, asset: t.asset, method: 'x402',
    ...(paid?.tx ?? t.tx) != null ? { tx: paid?.tx ?? t.tx } : {},
    settledAt: paid?.at ?? t.createdAt
  })
}

function checked<T> (fn: () => T): T {
  try {
    return fn()
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
