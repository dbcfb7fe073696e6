/**
 * The writes of pins (PinLedger's create, update, remove, takeDown, renew,
 * finishFetch, failFetch, and the imports), each inside a write transaction
 * (./tx.ts) that a caller either made for it alone or shares with ticket
 * writes (LedgerTransaction). A read that decides a write locks its row
 * (SELECT ... FOR UPDATE): two writes of one pin take turns, and the second
 * decides on what the first left.
 */
import type { CID } from 'multiformats/cid'
import { seedClock } from '../clock.js'
import { PinGoneError } from '../errors.js'
import { withdrawn, type PaymentRecord, type PinRecord } from '../records.js'
import { addRefs, releaseRefs, releaseReplaced } from './block-refs.js'
import { cidKey, dequeue, enqueue, getPin, insertPayment, putPin, unsettled } from './pin-store.js'
import type { Tx } from './tx.js'

const keysOf = (blocks: Array<string | CID>): string[] => [...new Set(blocks.map(cidKey))]

/** PinLedger.create: the pin, its payment, its block references; a replacement removes what it replaces. */
export async function createPin (tx: Tx, pin: PinRecord, payment: PaymentRecord | undefined, blocks: Array<string | CID>): Promise<void> {
  if (pin.replaces != null) {
    const old = await getPin(tx, pin.replaces, true)
    if (old == null || old.removed != null || old.owner !== pin.owner) tx.fail(new PinGoneError(pin.replaces))
    const at = new Date()
    await putPin(tx, { ...old, removed: { at: at.toISOString(), why: 'replaced' }, replacedBy: pin.requestid })
    await dequeue(tx, old.requestid)
    tx.changes.removed.push(old.requestid)
  }
  if (payment != null) await insertPayment(tx, payment)
  await putPin(tx, pin, true)
  if (pin.removed == null && unsettled(pin)) await enqueue(tx, pin)
  await addRefs(tx, pin, keysOf(blocks))
  // a replacement recorded settled (pinned or failed) lets go of what it replaced now: no fetch will
  if (pin.replaces != null && !unsettled(pin)) await releaseReplaced(tx, pin)
}

/** PinLedger.update; a pin an operator took down stays as it is. */
export async function updatePin (tx: Tx, requestid: string, change: (pin: PinRecord) => PinRecord): Promise<PinRecord | undefined> {
  const current = await getPin(tx, requestid, true)
  if (current == null) return undefined
  if (current.takedown != null) return current
  const updated = change(structuredClone(current))
  await putPin(tx, updated)
  return updated
}

/** PinLedger.remove */
export async function removePin (tx: Tx, requestid: string, why: NonNullable<PinRecord['removed']>['why'], at: Date): Promise<PinRecord | undefined> {
  const pin = await getPin(tx, requestid, true)
  if (pin == null || pin.removed != null) return undefined
  const removed = { ...pin, removed: { at: at.toISOString(), why } }
  await putPin(tx, removed)
  await dequeue(tx, requestid)
  await releaseRefs(tx, requestid)
  // a replacement removed before it settled also lets go of what it replaced
  await releaseReplaced(tx, pin)
  tx.changes.removed.push(requestid)
  return removed
}

/** PinLedger.takeDown */
export async function takeDownPin (tx: Tx, requestid: string, reason: string, at: Date): Promise<PinRecord | undefined> {
  const pin = await getPin(tx, requestid, true)
  if (pin == null || pin.removed != null || pin.takedown != null) return undefined
  const down: PinRecord = { ...pin, status: 'failed', statusDetails: `removed by the operator on ${at.toISOString()}: ${reason}`, takedown: { at: at.toISOString(), reason } }
  delete down.fetch
  await putPin(tx, down)
  await dequeue(tx, requestid)
  await releaseRefs(tx, requestid)
  // a replacement taken down before it settled lets go of what its chain held
  await releaseReplaced(tx, pin)
  tx.changes.removed.push(requestid)
  return down
}

/** PinLedger.renew */
export async function renewPin (tx: Tx, requestid: string, months: number, payment: PaymentRecord | undefined, until: (pin: PinRecord) => Date): Promise<PinRecord> {
  const pin = await getPin(tx, requestid, true)
  if (pin == null || pin.removed != null) tx.fail(new PinGoneError(requestid))
  let pinnedUntil: Date
  try {
    pinnedUntil = until(pin)
  } catch (err) {
    tx.fail(err)
  }
  if (payment != null) await insertPayment(tx, payment)
  const renewed = { ...pin, pinnedUntil: pinnedUntil.toISOString(), months: pin.months + months }
  await putPin(tx, renewed)
  return renewed
}

/** PinLedger.finishFetch: pinned, its blocks held, out of the queue; what it replaced is released. */
export async function finishFetch (tx: Tx, requestid: string, blocks: Array<string | CID>, dagSize: number, details: string): Promise<PinRecord | undefined> {
  // the first to finish or fail it wins (two front ends may both have fetched it, one after its claim lapsed)
  if (!await dequeue(tx, requestid)) return undefined
  const pin = await getPin(tx, requestid, true)
  if (pin == null || withdrawn(pin)) return undefined
  const done: PinRecord = { ...pin, status: 'pinned', dagSize, statusDetails: details }
  delete done.fetch
  await putPin(tx, done)
  await addRefs(tx, done, keysOf(blocks))
  await releaseReplaced(tx, pin)
  return done
}

/** PinLedger.failFetch */
export async function failFetch (tx: Tx, requestid: string, details: string): Promise<PinRecord | undefined> {
  if (!await dequeue(tx, requestid)) return undefined
  const pin = await getPin(tx, requestid, true)
  if (pin == null || withdrawn(pin)) return undefined
  const failed: PinRecord = { ...pin, status: 'failed', statusDetails: details }
  await putPin(tx, failed)
  await releaseReplaced(tx, pin)
  return failed
}

/** LedgerTransaction.importPins: records as they are, with the references the source ledger had. */
export async function importPins (tx: Tx, pins: Array<{ pin: PinRecord, blocks?: string[] }>, payments: PaymentRecord[]): Promise<void> {
  for (const p of payments) await insertPayment(tx, p)
  let maxUs = 0
  for (const { pin, blocks } of pins) {
    await putPin(tx, pin, true)
    maxUs = Math.max(maxUs, pin.createdUs)
    if (blocks != null && blocks.length > 0) await addRefs(tx, pin, keysOf(blocks))
    if (pin.removed == null && unsettled(pin)) await enqueue(tx, pin)
  }
  seedClock(maxUs)
  // no front end hands out a `created` at or before an imported pin's
  if (maxUs > 0) await tx.q('UPDATE clock SET last_us = GREATEST(last_us, $1)', [maxUs])
}
