/**
 * Upload tickets (../tickets.ts) in the `tickets` table. A claim locks the
 * ticket's row (SELECT ... FOR UPDATE), checks it and sets claimed_by only
 * where it is still unset: of many uploads claiming one ticket at once, one
 * sets it and the others, waiting on the lock, find it used.
 */
import { TicketClaimError } from '../errors.js'
import type { UploadTicket, UploadTickets } from '../tickets.js'
import { json, query, storableKey, type Db } from './pin-store.js'
import type { Tx } from './tx.js'

/** The ticket `owner` may use now; TicketClaimError otherwise. */
function checked (t: UploadTicket | undefined, owner: string, now: Date): UploadTicket {
  if (t == null) throw new TicketClaimError('unknown', 'no such upload ticket')
  if (t.payer !== owner.toLowerCase()) throw new TicketClaimError('not-owner', 'this upload ticket was bought by another wallet; only its payer\'s wallet token can use it')
  if (t.claimed != null) throw new TicketClaimError('used', `this upload ticket was used already (pin ${t.claimed.requestid})`)
  if (Date.parse(t.expiresAt) <= now.getTime()) throw new TicketClaimError('expired', `this upload ticket expired at ${t.expiresAt}`)
  return t
}

export async function getTicket (db: Db | Tx, id: string, lock = false): Promise<UploadTicket | undefined> {
  if (!storableKey(id)) return undefined
  const r = await query<{ record: UploadTicket }>(db, `SELECT record FROM tickets WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id])
  return r.rows[0]?.record
}

/** Writes a new ticket; an id that exists is refused. */
export async function putTicket (tx: Tx, t: UploadTicket): Promise<void> {
  await tx.q('INSERT INTO tickets (id, payer, payment_id, claimed_by, record) VALUES ($1, $2, $3, $4, $5)', [t.id, t.payer, t.paymentId, t.claimed?.requestid ?? null, json(t)],
    (c) => c === 'tickets_pkey' ? new Error(`upload ticket ${t.id} exists already`) : c === 'tickets_claimed_by_key' ? new Error(`pin ${t.claimed?.requestid ?? ''} claimed another ticket already`) : undefined)
}

/** Checks a ticket and marks it claimed by `requestid`, in the transaction that writes that pin. */
export async function claimTicket (tx: Tx, id: string, owner: string, requestid: string, now: Date = new Date()): Promise<void> {
  let t: UploadTicket
  try {
    t = checked(await getTicket(tx, id, true), owner, now)
  } catch (err) {
    tx.fail(err)
  }
  const claimed: UploadTicket = { ...t, claimed: { requestid, at: now.toISOString() } }
  const r = await tx.q('UPDATE tickets SET claimed_by = $2, record = $3 WHERE id = $1 AND claimed_by IS NULL', [id, requestid, json(claimed)],
    (c) => c === 'tickets_claimed_by_key' ? new Error(`pin ${requestid} claimed another ticket already`) : undefined)
  // the row lock makes this unreachable; the condition is the database's word on it all the same
  if (r.rowCount !== 1) tx.fail(new TicketClaimError('used', 'this upload ticket was used already'))
}

export function uploadTickets (db: Db, write: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>): UploadTickets {
  return {
    get: async (id) => await getTicket(db, id),
    check: async (id, owner, now = new Date()) => checked(await getTicket(db, id), owner, now),
    noteFailed: async (id, bytes) => {
      if (bytes <= 0) return
      // the row locked while it is read and written: concurrent failures add up
      await write(async (tx) => {
        const t = await getTicket(tx, id, true)
        if (t == null || t.claimed != null) return
        await tx.q('UPDATE tickets SET record = $2 WHERE id = $1', [id, json({ ...t, failedBytes: (t.failedBytes ?? 0) + bytes })])
      })
    }
  }
}
