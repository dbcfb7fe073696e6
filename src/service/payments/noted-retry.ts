/**
 * A payment sent again while its settlement note is open: an earlier request
 * with it settled with an uncertain outcome (service/payments/settle.ts), or died, and
 * reconciliation has not read the note yet. The payer did nothing wrong, so
 * the retry is never told the payment was used up: the note is reconciled
 * now, for this payment only, against the token's authorizationState:
 *   - used: what the note says the payment bought is recorded now (as
 *     reconciliation would), and the request is answered as a replay of a
 *     recorded payment;
 *   - unused: the money never moved; the request goes on as with any unused
 *     payment (its own settlement note replaces this one);
 *   - the chain cannot be read (or there is no RPC to read it through): 503
 *     with Retry-After, the note stays.
 * Only a note of the same request is reconciled here (same signed
 * authorization, same purpose); any other is left to the usual path.
 */
import { UnavailableError } from '../../kernel/errors.js'
import type { PinLedger } from '../../ledger/pins.js'
import type { SettlementNotes, SettlingRecord } from '../../ledger/settlements.js'
import type { Logger } from '../../kernel/log.js'
import type { AuthorizationStateReader } from '../../payment/authorization-state.js'
import type { PaymentIdentity } from '../../payment/gate.js'
import { CannotFulfilError, type Fulfilled } from './settlement-fulfil.js'

/** seconds a retry waits when the chain cannot tell yet */
export const OPEN_NOTE_RETRY_S = 30

export interface OpenNoteDeps {
  notes: Pick<SettlementNotes, 'get'>
  ledger: Pick<PinLedger, 'paymentUsed'>
  /** the token's authorization state (--rpc-url); absent: a note cannot be reconciled by a request */
  chain?: Pick<AuthorizationStateReader, 'isUsed' | 'usedIn' | 'network'>
  /** several networks: each one's reader by CAIP-2 id (a note is read on the chain it was paid on) */
  chains?: ReadonlyMap<string, Pick<AuthorizationStateReader, 'isUsed' | 'usedIn' | 'network'>>
  /** records what a note's payment bought (settlementActions.fulfil: one at a time per payment) */
  fulfil: (note: SettlingRecord, tx: `0x${string}` | undefined) => Promise<Fulfilled>
  log: Logger
}

export type OpenNote =
  /** no open note of this request: the usual path decides */
  | { kind: 'none' }
  /** the payment is recorded now: answer as a replay */
  | { kind: 'recorded' }
  /** the note's settlement never happened: the payment is unused */
  | { kind: 'unused', note: SettlingRecord }

export async function reconcileOpenNote (who: PaymentIdentity, sameRequest: (purpose: string) => boolean, d: OpenNoteDeps | undefined): Promise<OpenNote> {
  const note = await d?.notes.get(who.id)
  if (d == null || note == null || note.fulfil?.proof !== who.proof || !sameRequest(note.purpose)) return { kind: 'none' }
  if (await d.ledger.paymentUsed(who.id)) return { kind: 'recorded' }
  if (note.state === 'paid-unfulfilled') throw paidUnfulfilled(who.id)
  const [authorizer, nonce] = who.id.split(':') as [`0x${string}`, `0x${string}`]
  // the chain the payment was made on (notes of older versions: the first network's); none to read it: not yet
  const chain = note.network == null ? d.chain : d.chains?.get(note.network) ?? (d.chain?.network == null || d.chain.network === note.network ? d.chain : undefined)
  if (chain == null) throw notYet()
  let used: boolean
  try {
    used = await chain.isUsed(authorizer, nonce)
  } catch (err) {
    d.log.warn('a retried payment with an open settlement note could not be checked against the chain', { payment: who.id, error: (err as Error).message })
    throw notYet()
  }
  if (!used) return { kind: 'unused', note }
  // the transaction is for the record; a chain that will not say leaves it out
  const tx = await chain.usedIn(authorizer, nonce).catch(() => undefined)
  try {
    const pin = await d.fulfil(note, tx)
    d.log.warn('a payment whose settlement was uncertain was found settled on chain when its request was retried: the pin it bought is recorded now', {
      payment: note.paymentId, payer: note.payer, amount: note.amount, purpose: note.purpose, requestid: pin.requestid, cid: pin.cid
    })
  } catch (err) {
    // recorded meanwhile (reconciliation's own pass)
    if (await d.ledger.paymentUsed(who.id)) return { kind: 'recorded' }
    if (err instanceof CannotFulfilError) {
      d.log.warn(`a paid settlement note cannot be fulfilled: ${err.message}`, { payment: who.id })
      throw paidUnfulfilled(who.id)
    }
    throw err
  }
  return { kind: 'recorded' }
}

function notYet (): UnavailableError {
  return new UnavailableError('an earlier request with this payment could not tell whether its settlement went through, and the chain cannot tell yet either; retry later with the same payment (do not pay again)', OPEN_NOTE_RETRY_S)
}

/** the money moved, and what it bought cannot be recorded (a staged block lost, the pin gone): an operator refunds or re-pins */
function paidUnfulfilled (id: string): UnavailableError {
  return new UnavailableError(`payment ${id} was settled, but what it paid for cannot be carried out now; the operator has been told (it is refunded or carried out by hand): do not pay again`, 3600)
}
