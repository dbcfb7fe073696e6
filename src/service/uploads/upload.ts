/**
 * POST /upload as a use case: quote on the declared size, verify the payment,
 * stream the file into a staging area with the byte cap (or, with S3,
 * straight to the store: UploadWrites), settle, then commit the blocks and
 * write the pin + payment in one ledger transaction, and issue the owner's
 * wallet token. Unpaid or refused work leaves nothing behind.
 */
import type { TokenService } from '../../auth/tokens.js'
import { BodyTooLargeError, InputTimeoutError, InputTooLargeError, InvalidInputError, LengthRequiredError, PaymentRequiredError, RefusedError, ReplayRefusedError, UnavailableError } from '../../kernel/errors.js'
import { CarError, importCar } from '../../ipfs/car-import.js'
import { DirectoryError, importDirectory, type DirectoryImportResult } from '../../ipfs/directory-import.js'
import { importFile, TooLargeError, UNIXFS_PROFILE } from '../../ipfs/import.js'
import { RETRY_AFTER_S, StorageTimeoutError, StorageUnavailableError, type BlockBackend } from '../../ipfs/block-backend.js'
import type { CommitLock } from '../../ipfs/commit-lock.js'
import type { DirectImports } from '../../ipfs/direct-import.js'
import type { BlockStaging, StagedImport } from '../../ipfs/staging.js'
import type { WriteJournals } from '../../ipfs/write-journal.js'
import { addMonths } from '../../ledger/clock.js'
import { PaymentReusedError } from '../../ledger/errors.js'
import type { PinLedger } from '../../ledger/pins.js'
import type { SettlementNotes, SettlingRecord } from '../../ledger/settlements.js'
import type { PaymentRecord, PinRecord } from '../../ledger/records.js'
import { newRequestid } from '../../ledger/requestid.js'
import type { Logger } from '../../kernel/log.js'
import type { CID } from 'multiformats/cid'
import { z } from 'zod/v4'
import { ADDRESS, count, DIGITS, LOWER_ADDRESS, text, USDC } from '../../kernel/api-shapes.js'
import type { PaidRoutes } from '../../payment/bazaar.js'
import { identifyPayment, type PaymentGate, type PaymentIdentity, type Quote, type VerifiedPayment } from '../../payment/gate.js'
import { formatUsdc, priceFor, type PriceSettings } from '../../payment/pricing.js'
import { reconcileOpenNote, type OpenNoteDeps } from '../payments/noted-retry.js'
import type { PaymentOnce } from '../payments/paid-once.js'
import type { RetryLater } from './retry-later.js'
import { settleNoted } from '../payments/settle.js'
import type { FailedWrites } from './failed-writes.js'
import type { Slots } from './slots.js'
import { unavailableForLegalReasons } from '../serving/denials.js'
import type { Refusal } from '../serving/serve-policy.js'

/** multipart framing allowed on top of the file limit before a declared length is refused outright */
export const MULTIPART_SLACK = 64 * 1024
/** the body of a replayed payment must arrive within this, plus the original file's size at REPLAY_MIN_RATE */
const REPLAY_BASE_MS = 10_000
/** bytes per second */
const REPLAY_MIN_RATE = 256 * 1024

export interface UploadDeps {
  ledger: Pick<PinLedger, 'create' | 'get' | 'payment' | 'paymentUsed' | 'clearSettling' | 'markSettleUncertain' | 'markSettling' | 'nextCreated'>
  staging: Pick<BlockStaging, 'begin' | 'commit' | 'discard' | 'discarding' | 'keepOnly' | 'seal'>
  lock: Pick<CommitLock, 'shared'>
  gate: Pick<PaymentGate, 'decide' | 'settle' | 'settleRefusal'>
  tokens: Pick<TokenService, 'issue'>
  once: Pick<PaymentOnce, 'finished' | 'run'>
  prices: PriceSettings
  uploadMaxBytes: number
  /** paid uploads streaming at once (--upload-concurrency) */
  slots: Pick<Slots, 'release' | 'size' | 'take'>
  /** replays of used payments whose bodies are checked at once (see replay) */
  replaySlots: Pick<Slots, 'release' | 'take'>
  publicUrl: string
  /** the content origin a root is served at as a website (the subdomain gateway); absent: none */
  siteUrl?: (cid: string) => string | undefined
  network: string
  asset: string
  log: Logger
  /** why content may not be kept (denials): checked once imported, before the payment is settled */
  refusal?: (cid: CID) => Refusal | undefined
  /** the block store: while it cannot be reached, uploads answer 503 before any payment is used */
  storage?: Pick<BlockBackend, 'writable' | 'ready'>
  /** finishes a paid upload the block store went away from between settlement and commit */
  retry?: RetryLater
  /** settlement notes: a payment with one may have been used (its settlement's outcome is pending) */
  notes?: Pick<SettlementNotes, 'get'>
  /** reconciles the open note of a retried payment at once (noted-retry.ts) */
  openNotes?: OpenNoteDeps
  /** the paid routes' bazaar declarations: each 402 carries its route's (payment/bazaar.ts) */
  paidRoutes?: PaidRoutes
  /** paid uploads whose blocks go straight to the store, when `use()` says so (UploadWrites: direct) */
  direct?: DirectWrites
}

/** What writes a paid upload's blocks straight to the block store (S3: the PUTs overlap the import). */
export interface DirectWrites {
  /** whether a paid upload beginning now writes straight to the store (else it is staged) */
  use: () => boolean
  imports: Pick<DirectImports, 'begin'>
  /** each upload's list of the blocks it writes, for the start after a crash */
  journals?: Pick<WriteJournals, 'open'>
  /** deletes the blocks of a failed upload that nothing holds (gc.ts removeUnreferenced) */
  discard: (blocks: Array<{ cid: CID, bytes: number }>) => Promise<{ removed: number, freedBytes: number }>
  /** what failed uploads wrote, per payer: past its allowance, a payer's uploads are staged (./failed-writes.ts) */
  failures?: Pick<FailedWrites, 'allows' | 'failed'>
}

/**
 * Reads the one file a request carries: `consume` gets its name and its
 * bytes while the rest is still arriving (nothing is buffered whole), and
 * the reader stops at `maxBodyBytes` of input in all (a BodyTooLargeError),
 * or when `signal` aborts. The chunks are the reader's to give away: nobody
 * else holds them. (A callback rather than an iterable: the limits and the
 * abort apply to the whole input, framing included, around the file.)
 */
export type FileReader = <T>(consume: (body: BodyContent) => Promise<T>, limits: { maxBodyBytes: number, signal?: AbortSignal }) => Promise<T>

/** what an upload's body holds: one file (or a CAR), or a directory's files, each named by its relative path */
export type BodyContent = { name?: string, type?: string, bytes: AsyncIterable<Uint8Array> } | { directory: AsyncIterable<{ path?: string, bytes: AsyncIterable<Uint8Array> }> }

/** a file part of this content type is a CAR: its DAG is pinned as it is (car-import.ts) */
export const CAR_TYPE = 'application/vnd.ipld.car'

export interface UploadInput {
  months: number
  /** the x402 payment (PAYMENT-SIGNATURE), when one was sent */
  payment?: string
  /** the size of the file, when the client declared it (X-Upload-Size): the price is based on it */
  fileBytes?: number
  /** the size of the whole input, file and framing (Content-Length), when declared: the price is based on it when fileBytes is not */
  bodyBytes?: number
  file: FileReader
}

/** The body an upload answers: the pin it created (OpenAPI: UploadResult, derived from this) */
export const UploadResult = z.object({
  requestid: text('the pin\'s requestid (GET /pins/{requestid})', { format: 'uuid' }),
  cid: text(`CIDv1 of the file (IPIP-499 profile ${UNIXFS_PROFILE}: raw leaves, 1 MiB chunks, balanced, 1024 links per node), or the root of a CAR`, { examples: ['bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'] }),
  name: text('the uploaded filename (sanitized)', { maxLength: 255 }).optional(),
  size: count('file bytes'),
  dag_size: count('bytes of all blocks'),
  status: z.literal('pinned'),
  created: text('RFC 3339 with microseconds', { format: 'date-time' }),
  pinned_until: text('paid until', { format: 'date-time' }),
  months: count('months bought', 1),
  owner: text('the payer, lowercase', { pattern: LOWER_ADDRESS }),
  price: z.object({
    amount: text('atomic units', { pattern: DIGITS }),
    usdc: text('in USDC', { pattern: USDC }),
    asset: text('the token', { pattern: ADDRESS }),
    network: text('CAIP-2 network'),
    transaction: text('the settlement transaction')
  }),
  gateway_url: text('where the content is served', { format: 'uri' }),
  site_url: text('where the content is served as a website, in an origin of its own (when the operator runs the subdomain gateway, --gateway-domain)', { format: 'uri' }).optional(),
  files: z.array(z.object({
    path: text('the file\'s path in the directory'),
    cid: text('the file\'s CID'),
    size: count('its bytes')
  })).meta({ description: 'a directory upload\'s files (not on a replay)' }).optional(),
  replayed: z.literal(true).meta({ description: 'present on a retry with a payment already settled for this content' }).optional(),
  token_hint: text('on a replay: how to get a new wallet token').optional()
}).meta({ description: 'The pin an upload created' })

/** What an upload answers: the pin, and for a first upload the settlement and the owner's new token. */
export interface UploadOutcome {
  /** a payment already used for this very upload: the original pin, no new token */
  replayed: boolean
  result: z.output<typeof UploadResult>
  /** x402's settlement response (PAYMENT-RESPONSE) */
  settlement?: string
  token?: { token: string, expiresAt: Date }
  /** the pin's URL */
  location?: string
}

export async function upload (input: UploadInput, d: UploadDeps): Promise<UploadOutcome> {
  const { months } = input
  const paymentHeader = input.payment
  const declared = declaredSize(input, d.uploadMaxBytes)
  // a price over the maximum is a PriceTooHighError: a bad request (src/http/error-catalog.ts)
  const amount = priceFor(BigInt(declared), months, d.prices)
  const quote: Quote = {
    amount,
    months,
    bytes: BigInt(declared),
    resourceUrl: `${d.publicUrl}/upload`,
    ...(d.paidRoutes != null ? { discovery: { route: d.paidRoutes.upload, path: '/upload' } } : {}),
    description: `Pin an uploaded file of up to ${declared} bytes for ${months} month(s)`,
    notes: { sizeSource: input.fileBytes != null ? 'X-Upload-Size header' : 'Content-Length of the request' }
  }
  const paid = paymentHeader != null && paymentHeader !== ''
  /** the open note of an earlier request with this payment whose settlement never happened */
  const stale: { note?: SettlingRecord } = {}
  try {
    // a payment that was already used (it is public on chain once settled: anyone can send it again)
    // is known from the header alone, before any body is read: it takes no upload slot
    const used = paid ? await usedBefore(paymentHeader, d, stale) : undefined
    if (used != null) return await replay(input, used, d)
    // a store that cannot be reached takes no upload: 503 before the payment is even looked at
    if (d.storage?.writable() === false) throw new StorageUnavailableError('the block storage is unreachable right now; retry shortly (no payment was used)')
    // a paid upload needs a slot, taken before the payment is even looked at: a busy
    // server answers 503 and nobody is charged (the unpaid 402 needs none: no body is read)
    if (paid && !d.slots.take()) {
      throw new UnavailableError(`${d.slots.size} uploads are in progress, the most this server takes at once; retry shortly (your payment was not used)`, 5)
    }
    try {
      return await decideAndUpload(input, quote, declared, d, stale)
    } finally {
      if (paid) d.slots.release()
    }
  } finally {
    if (stale.note != null) await releaseStale(stale.note, d)
  }
}

async function decideAndUpload (input: UploadInput, quote: Quote, declared: number, d: UploadDeps, stale: { note?: SettlingRecord }): Promise<UploadOutcome> {
  const decision = await d.gate.decide(input.payment, quote, (id) => d.ledger.paymentUsed(id))
  if (decision.type === 'payment-required') throw decision.error
  const payment = decision.payment
  // the file may not exceed what was declared (and paid for), nor the service limit
  const maxFileBytes = Math.min(d.uploadMaxBytes, declared)

  if (decision.type === 'settled-before') return await replay(input, payment, d)
  d.log.info('payment verified', { payment: payment.id, amount: payment.amount })
  for (;;) {
    const outcome = await d.once.run(payment.id, async () => {
      if (await d.ledger.paymentUsed(payment.id)) return undefined
      return await paidUpload(input, payment, maxFileBytes, d)
    })
    if (outcome.first) {
      if (outcome.value != null) return outcome.value
      break
    }
    // another request with this payment ran first. If it ended without using the payment (nothing
    // recorded, no settlement note left: it failed before settling, e.g. its client went away),
    // the payment is still unused: this request does the work, rather than answer "already used"
    if (d.notes == null || await d.ledger.paymentUsed(payment.id)) break
    if (await d.notes.get(payment.id) != null) {
      // it left a note (its settlement's outcome was uncertain): the chain tells now (or 503)
      const open = await reconcileOpenNote(payment, (purpose) => purpose.startsWith('upload:'), d.openNotes)
      if (open.kind !== 'unused') break
      stale.note ??= open.note
    }
  }
  return await replay(input, payment, d)
}

/**
 * The staging folder an open note kept for a settlement that never happened goes once
 * the note no longer needs it (a newer note of this payment, or its pin, took over).
 */
async function releaseStale (note: SettlingRecord, d: UploadDeps): Promise<void> {
  const id = note.fulfil?.upload?.staging
  if (id == null || (await d.notes?.get(note.paymentId))?.fulfil?.upload?.staging === id) return
  await d.staging.discard({ id }).catch((err: Error) => { d.log.warn('could not remove a staging folder', { error: err.message }) })
}

async function paidUpload (input: UploadInput, payment: VerifiedPayment, maxFileBytes: number, d: UploadDeps): Promise<UploadOutcome> {
  const { months } = input
  const writes = await beginWrites(d, payment.payer)
  /** what becomes of the blocks: deleted (failed), kept for the payment's note, or the pin's */
  let outcome: WritesOutcome = 'failed'
  const t0 = performance.now()
  const ms = { import: 0, settle: 0, commit: 0, ledger: 0 }
  let mark = t0
  /** ms since the previous phase ended */
  const lap = (): number => { const now = performance.now(); const d = Math.round(now - mark); mark = now; return d }
  try {
    const imported = await importBody(input.file, writes.target, { maxFileBytes, maxBodyBytes: maxFileBytes + MULTIPART_SLACK })
    // a CAR's blocks its root does not reach are not kept
    if (imported.reachable != null) writes.keepOnly(imported.reachable)
    ms.import = lap()
    const cid = imported.cid.toString()
    // the CID is known only now: denied content (its root or any block) is refused before the
    // payment is settled, so the payer is not charged, and its blocks go (finally, below)
    refuseDenied(imported.cid, writes.cids, d)
    const draft = uploadPin(payment, months, imported, writes.bytes, d, await d.ledger.nextCreated())
    // every block durable where the note says before anyone is charged: should the process die once
    // the money has moved, reconciliation records this pin from them (settlement-fulfil.ts)
    const durable = await writes.durable(lap)
    // the wallet token is signed before the money moves: a key store that cannot be read (a ledger
    // away) answers 503 with the payment unused, never after it was charged
    const token = await d.tokens.issue(payment.payer)
    const settled = await settleNoted(d.gate, d.ledger, payment, `upload:${cid}`, { pin: draft, proof: payment.proof, upload: writes.note() })
    if (!settled.ok) {
      // the payment may have gone through: its note keeps the blocks for reconciliation to record
      if (settled.uncertain === true) outcome = 'kept'
      throw await d.gate.settleRefusal(quoteOf(payment, months, d), settled, 'nothing was pinned')
    }
    ms.settle = lap()
    // paid: from here the blocks stay with the payment's note until the pin is recorded, whatever fails
    // (the ledger's block fence unreachable before the commit, the store during it, the ledger after it)
    outcome = 'kept'
    const pin: PinRecord = { ...draft, payment: { ...draft.payment, network: settled.network, tx: settled.tx, settledAt: new Date().toISOString() } }
    const record: PaymentRecord = {
      id: payment.id, requestid: pin.requestid, purpose: `upload:${cid}`, payer: payment.payer, amount: pin.payment.amount,
      network: settled.network, tx: settled.tx, at: pin.payment.settledAt as string, proof: payment.proof
    }
    // commit and ledger record under the commit lock: gc never sweeps in between
    await d.lock.shared(async () => {
      try {
        await writes.commit()
      } catch (err) {
        // paid but not stored: the note stays, and with it the staging folder, for reconciliation to retry
        d.log.error('upload settled but its blocks could not be stored', { payment: payment.id, tx: settled.tx, error: err })
        if (d.retry != null && (err instanceof StorageUnavailableError || err instanceof StorageTimeoutError)) {
          finishLater(writes, pin, record, d, d.retry)
          throw new UnavailableError(`your payment was settled (transaction ${settled.tx}), but the block storage went away before the file could be stored; the file is kept and is pinned under your wallet as soon as the storage answers again (GET /pins). Do not pay again`, RETRY_AFTER_S)
        }
        throw err
      }
      ms.commit = lap()
      try {
        await d.ledger.create(pin, record, writes.cids)
        ms.ledger = lap()
        outcome = 'recorded'
      } catch (err) {
        // paid and stored, not recorded (the ledger's database away, say): the note stays, and the blocks
        // with it, so that reconciliation or a retry of this payment can record the pin (settlement-fulfil.ts)
        d.log.error('upload settled but its pin could not be recorded', { payment: payment.id, tx: settled.tx, cid, error: err })
        throw err
      }
    }, writes.cids)
    d.log.info('upload pinned', { requestid: pin.requestid, cid: pin.cid, bytes: imported.fileSize, payer: payment.payer, tx: settled.tx, writes: writes.kind, importMs: ms.import, ...durable, settleMs: ms.settle, commitMs: ms.commit, ledgerMs: ms.ledger })
    return { replayed: false, result: uploadBody(pin, d, imported.files), settlement: settled.header, token, location: `${d.publicUrl}/pins/${pin.requestid}` }
  } catch (err) {
    // a write to the store that failed while the body arrived (direct writes): nothing was charged
    if (outcome === 'failed' && (err instanceof StorageUnavailableError || err instanceof StorageTimeoutError) && writes.kind === 'direct') {
      throw new StorageUnavailableError('the block storage went away during the upload; nothing was kept and your payment was not used; retry shortly')
    }
    throw err
  } finally {
    await writes.end(outcome)
  }
}

/** what a paid upload's writes end as: deleted (the upload failed), held by the payment's settlement note, or its recorded pin's */
type WritesOutcome = 'failed' | 'kept' | 'recorded'

/**
 * Where a paid upload's blocks go while its body arrives (verified, not yet
 * settled), and what becomes of them:
 *   - staged: into a private staging folder on local disk, sealed before the
 *     settlement and committed to the store after it (staging.ts): nothing
 *     reaches the store before the payment is settled;
 *   - direct (`UploadDeps.direct`, the S3 backend's choice): straight to the
 *     store as the body arrives (direct-import.ts), so the PUTs overlap the
 *     import rather than follow the settlement. Each block is held from gc and
 *     named in a write journal before its write; a failed upload deletes what
 *     it wrote that nothing references (a crash: the next start, from the
 *     journal); once the settlement note names the blocks, it holds them
 *     from gc until the pin is recorded (reconciliation, after a crash, checks
 *     that each is in the store). A payer whose failed uploads wrote more
 *     than their allowance within the hour is staged (./failed-writes.ts).
 */
interface UploadWrites {
  kind: 'staged' | 'direct'
  target: Pick<StagedImport, 'blockstore' | 'chunker' | 'blockBuffer'>
  /** narrows the kept blocks to these (a CAR's: those its root reaches) */
  keepOnly: (reachable: CID[]) => void
  /** the blocks kept, in order */
  readonly cids: CID[]
  /** their bytes */
  readonly bytes: number
  /** resolves once every block is durable and the store answers (before the settlement); the phases' ms for the log */
  durable: (lap: () => number) => Promise<Record<string, number>>
  /** what the settlement note keeps of them */
  note: () => { staging?: string, blocks: string[] }
  /** after the settlement, under the commit lock: the blocks into the store (staged) */
  commit: () => Promise<void>
  /** releases what the upload holds, deleting its blocks as the outcome says (never throws) */
  end: (outcome: WritesOutcome) => Promise<void>
}

async function beginWrites (d: UploadDeps, payer: string): Promise<UploadWrites> {
  if (d.direct?.use() === true && d.direct.failures?.allows(payer) !== false) return await directWrites(d.direct, payer, d.log, d.retry)
  const staged = await d.staging.begin()
  return {
    kind: 'staged',
    target: staged,
    keepOnly: (reachable) => { d.staging.keepOnly(staged, reachable) },
    get cids () { return staged.cids },
    get bytes () { return staged.bytes },
    durable: async (lap) => {
      // the store must answer before anyone is charged (one round trip, made while the staged blocks
      // are flushed): if it went away while the body streamed in, the answer is 503 and the payment is not used
      const ready = storeReady(d)
      await d.staging.seal(staged)
      const sealMs = lap()
      const unreachable = await ready
      if (unreachable != null) throw unreachable
      return { sealMs, readyMs: lap() }
    },
    note: () => ({ staging: staged.id, blocks: staged.cids.map(String) }),
    commit: async () => { await d.staging.commit(staged) },
    end: async (outcome) => {
      // a failed cleanup must not hide the request's own outcome (the folder is swept at the next start anyway)
      if (outcome !== 'kept') await d.staging.discard(staged).catch((err: Error) => { d.log.warn('could not remove a staging folder', { error: err.message }) })
    }
  }
}

async function directWrites (d: DirectWrites, payer: string, log: Logger, retry?: RetryLater): Promise<UploadWrites> {
  const journal = await d.journals?.open('')
  const imp = d.imports.begin(journal)
  let kept: Set<string> | undefined
  const keptBlocks = (): Array<{ cid: CID, bytes: number }> => kept == null ? imp.written : imp.written.filter(b => kept?.has(b.cid.toString()) === true)
  return {
    kind: 'direct',
    target: imp,
    keepOnly: (reachable) => { kept = new Set(reachable.map(String)) },
    get cids () { return kept == null ? imp.cids : keptBlocks().map(b => b.cid) },
    get bytes () { return keptBlocks().reduce((n, b) => n + b.bytes, 0) },
    // every write has succeeded: the store has answered
    durable: async (lap) => { await imp.stored(); return { storedMs: lap() } },
    note: () => ({ blocks: keptBlocks().map(b => b.cid.toString()) }),
    commit: async () => {},
    end: async (outcome) => {
      await imp.release()
      // a failed upload's blocks go; a kept or recorded one's are the note's or the pin's, but for a CAR's unreached ones
      const gone = outcome === 'failed' ? imp.written : kept == null ? [] : imp.written.filter(b => kept?.has(b.cid.toString()) !== true)
      if (outcome === 'failed') d.failures?.failed(payer, imp.bytes)
      const forget = async (): Promise<void> => {
        // (a journal left behind names blocks a pin or a note holds, or none: the next start deletes nothing they hold)
        await journal?.remove().catch((err: unknown) => { log.warn('could not remove an upload\'s write journal', { error: (err as Error).message }) })
      }
      try {
        if (gone.length > 0) await d.discard(gone)
      } catch (err) {
        const bytes = gone.reduce((n, b) => n + b.bytes, 0)
        if (retry != null) {
          // the store did not take the deletes (an outage): tried again, with backoff, until it does; the journal
          // names the blocks until then, so a stop meanwhile leaves them to the next start
          log.warn('could not remove the blocks of a failed upload yet: trying again until the store takes the deletes', { bytes, error: (err as Error).message })
          retry.schedule('removing the blocks of a failed upload', async () => { await d.discard(gone); await forget() })
          return
        }
        log.warn('could not remove the blocks of a failed upload: the next gc removes them', { bytes, error: (err as Error).message })
      }
      await forget()
    }
  }
}

/** Whether the block store answers now: undefined, or the error to answer with (never rejects: it is awaited after the seal). */
async function storeReady (d: UploadDeps): Promise<Error | undefined> {
  try {
    await d.storage?.ready()
    return undefined
  } catch (err) {
    if (err instanceof StorageUnavailableError || err instanceof StorageTimeoutError) return new StorageUnavailableError('the block storage became unreachable during the upload; nothing was kept and your payment was not used; retry shortly')
    return err as Error
  }
}

export function refuseDenied (root: CID, blocks: readonly CID[], d: Pick<UploadDeps, 'refusal' | 'log' | 'publicUrl'>): void {
  if (d.refusal == null) return
  for (const cid of [root, ...blocks]) {
    const refused = d.refusal(cid)
    if (refused != null) {
      d.log.info('upload of denied content refused before settlement', { cid: root.toString(), block: cid.toString(), why: refused.message })
      throw unavailableForLegalReasons(cid.equals(root) ? root.toString() : `${root} (it holds block ${cid})`, refused, d.publicUrl)
    }
  }
}

/**
 * A settled upload whose commit met a storage outage: committed and recorded
 * (with its payment, removing the settlement note) once the store answers.
 * If reconciliation recorded it first, the ledger refuses the second record
 * and this stops.
 */
function finishLater (writes: Pick<UploadWrites, 'commit' | 'cids'>, pin: PinRecord, record: PaymentRecord, d: UploadDeps, retry: RetryLater): void {
  retry.schedule('finishing a paid upload after a storage outage', async () => {
    if (await d.ledger.paymentUsed(record.id)) return
    if (d.storage?.writable() === false) throw new StorageUnavailableError()
    await d.lock.shared(async () => {
      await writes.commit()
      await d.ledger.create(pin, record, writes.cids)
    }, writes.cids)
    d.log.warn('a paid upload is pinned now: the block storage answered again', { requestid: pin.requestid, cid: pin.cid, payment: record.id })
  }, (err) => err instanceof PaymentReusedError || /exists already/.test(String((err as Error)?.message)))
}

/** The pin an upload records: pinned from the start; payment fields as known before settlement; `dagSize` the bytes of its kept blocks. */
function uploadPin (payment: VerifiedPayment, months: number, imported: { cid: CID, fileSize: number, name?: string }, dagSize: number, d: UploadDeps, created: { us: number, iso: string }): PinRecord {
  return uploadedPin(payment.payer, months, imported, dagSize,
    { id: payment.id, payer: payment.payer, amount: payment.amount.toString(), network: payment.network, asset: payment.asset, method: 'x402' }, created)
}

/** The pin of an uploaded file (a paid upload's, a ticket's): pinned from now for `months`, paid by `payment`. */
export function uploadedPin (owner: string, months: number, imported: { cid: CID, fileSize: number, name?: string }, dagSize: number, payment: PinRecord['payment'], created: { us: number, iso: string }): PinRecord {
  const createdAt = new Date(Math.floor(created.us / 1000))
  return {
    requestid: newRequestid(createdAt.getTime()),
    owner,
    cid: imported.cid.toString(),
    name: imported.name,
    origins: [],
    meta: {},
    status: 'pinned',
    created: created.iso,
    createdUs: created.us,
    months,
    pinnedUntil: addMonths(createdAt, months).toISOString(),
    dagSize,
    fileSize: imported.fileSize,
    source: 'upload',
    payment
  }
}

/** A payment this server recorded (settled and used), or is using right now, named by a PAYMENT-SIGNATURE header. */
async function usedBefore (header: string, d: UploadDeps, stale: { note?: SettlingRecord }): Promise<PaymentIdentity | undefined> {
  const who = identifyPayment(header)
  if (who == null) return undefined
  // a request doing this payment's work right now: its outcome decides
  await d.once.finished(who.id)
  if (await d.ledger.paymentUsed(who.id)) return who
  // an earlier request with it left a settlement note (its outcome was uncertain): the chain
  // tells now whether the money moved (its pin is recorded, and this is a replay), or 503
  const open = await reconcileOpenNote(who, (purpose) => purpose.startsWith('upload:'), d.openNotes)
  if (open.kind === 'unused') stale.note = open.note
  return open.kind === 'recorded' ? who : undefined
}

/**
 * The same payment presented again. If it paid for this very content, answer
 * with the original pin (an honest retry). The wallet token is not sent again:
 * a settled authorization is public on chain, so it proves nothing about the
 * sender; the owner gets a fresh token with Sign-In with Ethereum instead.
 *
 * Anyone can send a settled payment again, so telling an honest retry costs
 * little and keeps nothing: what the head says refuses anything that cannot
 * be the same file (another purpose, another signature, a size that does not
 * fit); the body of what could be is hashed, not stored, capped at the size
 * of the original file, within a deadline (REPLAY_MIN_RATE), at most
 * `replaySlots` at once; and a refused replay's connection is closed rather
 * than its body read.
 */
async function replay (input: UploadInput, payment: PaymentIdentity, d: UploadDeps): Promise<UploadOutcome> {
  try {
    return await checkReplay(input, payment, d)
  } catch (err) {
    // whatever the answer, the rest of the body is not read
    if (err instanceof RefusedError) throw new ReplayRefusedError(err)
    throw err
  }
}

async function checkReplay (input: UploadInput, payment: PaymentIdentity, d: UploadDeps): Promise<UploadOutcome> {
  const record = await d.ledger.payment(payment.id)
  const pin = record != null ? await d.ledger.get(record.requestid) : undefined
  if (record == null || pin == null || record.proof !== payment.proof || !record.purpose.startsWith('upload:')) throw usedElsewhere()
  const fileBytes = pin.fileSize ?? pin.dagSize ?? d.uploadMaxBytes
  const maxBodyBytes = fileBytes + MULTIPART_SLACK
  const declaredFile = input.fileBytes
  const length = input.bodyBytes
  if ((declaredFile != null && declaredFile < fileBytes) || (length != null && (length < fileBytes || length > maxBodyBytes))) throw usedElsewhere()
  const deadlineMs = REPLAY_BASE_MS + Math.ceil(fileBytes / REPLAY_MIN_RATE * 1000)
  if (!d.replaySlots.take()) throw new UnavailableError('too many requests are re-sending payments that were already used; retry shortly', 5)
  let cid: string
  try {
    const signal = AbortSignal.timeout(deadlineMs)
    cid = (await importBody(input.file, d.staging.discarding(), { maxFileBytes: fileBytes, maxBodyBytes, signal })).cid.toString()
  } catch (err) {
    if (err instanceof InputTooLargeError) throw usedElsewhere()
    if ((err as Error)?.name === 'TimeoutError') {
      throw new InputTimeoutError(`the body of a request re-sending a used payment must arrive within ${Math.round(deadlineMs / 1000)} s; the connection is closed`)
    }
    throw err
  } finally {
    d.replaySlots.release()
  }
  if (record.purpose !== `upload:${cid}`) throw usedElsewhere()
  return { replayed: true, result: { ...uploadBody(pin, d), replayed: true, token_hint: 'this payment was already settled for this upload; get a new wallet token with POST /auth/challenge and POST /auth/token' } }
}

function usedElsewhere (): PaymentRequiredError {
  return new PaymentRequiredError('this payment was already used for another request; sign a new payment')
}

/** what a body imported as: a file's UnixFS DAG, a CAR's DAG (then `reachable`: the blocks its root reaches, all that may be kept), or a directory's (then `files`) */
export interface ImportedBody {
  cid: CID
  /** the bytes priced: the file's, the CAR's, or all the directory's files' */
  fileSize: number
  name?: string
  reachable?: CID[]
  files?: DirectoryImportResult['files']
}

export async function importBody (file: FileReader, target: Pick<StagedImport, 'blockstore' | 'chunker' | 'blockBuffer'>, limits: { maxFileBytes: number, maxBodyBytes: number, signal?: AbortSignal }): Promise<ImportedBody> {
  const { maxFileBytes, maxBodyBytes, signal } = limits
  try {
    return await file(async (f) => {
      if ('directory' in f) {
        const dir = await importDirectory(f.directory, { blockstore: target.blockstore, maxBytes: maxFileBytes, ...(signal != null ? { signal } : {}) })
        return { cid: dir.cid, fileSize: dir.fileSize, files: dir.files }
      }
      if (isCar(f.type)) {
        const car = await importCar(f.bytes, { blockstore: target.blockstore, blockBuffer: target.blockBuffer, ownsInput: true, maxBytes: maxFileBytes, ...(signal != null ? { signal } : {}) })
        return { cid: car.cid, fileSize: car.carBytes, name: sanitizeName(f.name), reachable: car.reachable }
      }
      // the reader's chunks are held by nobody else (FileReader): the chunker frees them once copied
      const r = await importFile(f.bytes, { blockstore: target.blockstore, chunker: target.chunker({ ownsInput: true }), maxBytes: maxFileBytes, ...(signal != null ? { signal } : {}) })
      return { ...r, name: sanitizeName(f.name) }
    }, { maxBodyBytes, ...(signal != null ? { signal } : {}) })
  } catch (err) {
    if (err instanceof CarError || err instanceof DirectoryError) throw new InvalidInputError(`${err.message}; nothing was kept or charged`)
    if (err instanceof BodyTooLargeError) {
      throw new InputTooLargeError(`the request body is larger than ${maxBodyBytes} bytes (the file declared and paid for, and its multipart framing); nothing was kept`)
    }
    if (err instanceof TooLargeError || (err as Error)?.name === 'TooLargeError') {
      throw new InputTooLargeError(`the file is larger than ${maxFileBytes} bytes (the upload limit or the size declared and paid for); nothing was kept`)
    }
    throw err
  }
}

/** a part's content type names a CAR (parameters such as `version=1` aside) */
function isCar (type: string | undefined): boolean {
  return type != null && type.split(';')[0]?.trim().toLowerCase() === CAR_TYPE
}

function quoteOf (p: VerifiedPayment, months: number, d: UploadDeps): Quote {
  return { amount: p.amount, months, bytes: 0n, resourceUrl: `${d.publicUrl}/upload`, description: 'Pin an uploaded file', ...(d.paidRoutes != null ? { discovery: { route: d.paidRoutes.upload, path: '/upload' } } : {}) }
}

/** an uploaded file's pin: pinned, its sizes known and its payment settled */
export function uploadBody (pin: PinRecord, d: Pick<UploadDeps, 'publicUrl' | 'siteUrl'>, files?: ImportedBody['files']): z.output<typeof UploadResult> {
  const site = d.siteUrl?.(pin.cid)
  return {
    ...(files != null ? { files: files.map(f => ({ path: f.path, cid: f.cid.toString(), size: f.size })) } : {}),
    requestid: pin.requestid,
    cid: pin.cid,
    name: pin.name,
    size: pin.fileSize as number,
    dag_size: pin.dagSize as number,
    status: pin.status as 'pinned',
    created: pin.created,
    pinned_until: pin.pinnedUntil,
    months: pin.months,
    owner: pin.owner,
    price: { amount: pin.payment.amount, usdc: formatUsdc(BigInt(pin.payment.amount)), asset: pin.payment.asset, network: pin.payment.network, transaction: pin.payment.tx as string },
    gateway_url: `${d.publicUrl}/ipfs/${pin.cid}`,
    ...(site != null ? { site_url: site } : {})
  }
}

/** The size a quote is based on: the file's (X-Upload-Size) or the whole input's (Content-Length). */
function declaredSize (input: UploadInput, max: number): number {
  const n = input.fileBytes ?? input.bodyBytes
  if (n == null) {
    throw new LengthRequiredError('send Content-Length (or X-Upload-Size with the file size in bytes) so the upload can be priced')
  }
  const limit = input.fileBytes != null ? max : max + MULTIPART_SLACK
  if (n > limit) throw new InputTooLargeError(`uploads are limited to ${max} bytes of file content; this request declares ${n} bytes`)
  return n
}

/** Keeps a file name printable and short; it is metadata, never a path. */
function sanitizeName (name: string | undefined): string | undefined {
  if (name == null) return undefined
  // eslint-disable-next-line no-control-regex
  const clean = name.replace(/[\u0000-\u001f\u007f]/g, '').split(/[\\/]/).pop()?.slice(0, 255)
  return clean === '' ? undefined : clean
}
