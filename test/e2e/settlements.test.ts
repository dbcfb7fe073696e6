/**
 * Settlement notes end to end, on the real chain and a real serve: a serve
 * killed right after a pin's payment was settled (the facilitator stand-in
 * kills it before answering) leaves a note with the authorization's
 * validBefore and the pin it bought; the next start finds it paid in the
 * background and records the pin, with its settlement transaction. An
 * upload's paid note waits for an operator. `pind settlements list/check/close` through a running serve's
 * admin socket and on a stopped data dir (notes planted with the ledger API),
 * with JSON output, the audit record of a closure, and exit codes 1 and 2.
 */
import { randomBytes } from 'node:crypto'
import { encodePaymentSignatureHeader } from '@x402/core/http'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid } from '../../scripts/peer/index.mjs'
import { openLedgerEnv } from '../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../src/ledger/lmdb/pins.js'
import { SettlementNotes, type SettlingRecord } from '../../src/ledger/lmdb/settlements.js'
import { noteFor, nowSeconds, signAuthorization, useAuthorization } from '../helpers/authorizations.js'
import { startFacilitatorStandIn, type StandIn } from '../helpers/facilitator-standin.js'
import { payingFetch } from '../helpers/paying-client.js'
import { runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

let chain: DevChain
let standIn: StandIn
let afterSettle: ((payload: unknown) => Promise<void>) | undefined
let pind: PindProcess | undefined
const dataDir = tempDir()
/** the payment id of the pin whose serve was killed after settling it (test 1) */
let killedId = ''
/** a paid-unfulfilled upload note, waiting for an operator (tests 2 and 3) */
let waitingId = ''

const serveArgs = (): string[] => ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--facilitator-url', standIn.url, '--pin-probe-timeout', '0']
const serve = async (): Promise<PindProcess> => { pind = await startPind({ dataDir, args: serveArgs() }); return pind }
const settlements = async (...args: string[]): Promise<{ code: number | null, out: string, err: string }> =>
  await runPind(['settlements', ...args, '--data-dir', dataDir])
const ok = async (...args: string[]): Promise<any> => {
  const r = await settlements(...args, '--json')
  expect(r.code, r.err).toBe(0)
  return JSON.parse(r.out)
}
const byId = (notes: any[]): Record<string, any> => Object.fromEntries(notes.map(n => [n.paymentId, n]))
async function plant (...notes: SettlingRecord[]): Promise<void> {
  const env = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
  try {
    const pins = new PinLedger(env)
    for (const n of notes) await pins.markSettling(n)
  } finally {
    await env.close()
  }
}
const payerKey = (i = 0): `0x${string}` => chain.payers[i]!.privateKey

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  standIn = await startFacilitatorStandIn(chain, 0, { afterSettle: async (p) => { await afterSettle?.(p) } })
})
afterAll(async () => {
  await pind?.stop('SIGKILL')
  await standIn?.close()
  await chain?.stop()
})

describe('settlement notes', () => {
  it('a serve killed between settling and recording a pin leaves a note; the next start finds it paid and records the pin', async () => {
    const first = await serve()
    let settled: any
    afterSettle = async (payload) => { settled = payload; await first.stop('SIGKILL') }
    const cid = rawCid(randomBytes(64)).toString()
    const r = await payingFetch(chain, payerKey(1))(`${first.url}/pins`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-pin-size': '1000' }, body: JSON.stringify({ cid })
    }).catch((err: Error) => err)
    afterSettle = undefined
    expect(r).toBeInstanceOf(Error) // the server died before it answered
    const auth = settled.payload.authorization as Record<string, string>
    killedId = `${auth.from!.toLowerCase()}:${auth.nonce!.toLowerCase()}`

    // the note outlived the process, with the signed authorization's validBefore
    const stopped = await settlements('list', '--json')
    expect(stopped.code, stopped.err).toBe(0)
    expect(stopped.err).toMatch(/on the data dir .* \(no serve running\)/)
    const listed = JSON.parse(stopped.out)
    expect(listed.via).toBe('data-dir')
    expect(listed.notes).toEqual([expect.objectContaining({
      paymentId: killedId, payer: auth.from!.toLowerCase(), amount: auth.value, amountUsdc: '0.001000', state: 'unchecked',
      validBefore: auth.validBefore, validBeforeAt: new Date(Number(auth.validBefore) * 1000).toISOString(), checkedAt: null
    })])
    expect(listed.notes[0].purpose).toContain(cid)

    // the next start reconciles it in the background: settled on chain, nothing recorded; the note
    // says what the payment bought, so the pin is recorded now, with its settlement transaction
    const second = await serve()
    await waitFor(() => /1 settlement notes to reconcile, 0 paid but unfulfilled/.test(second.stderr()) ? true : undefined, 'the start-up summary')
    const line = await waitFor(() => second.stderr().split('\n').find(l => /the pin it bought is recorded now/.test(l)), 'the fulfilment warning')
    const fulfilled = JSON.parse(line)
    expect(fulfilled).toMatchObject({ level: 'warn', payment: killedId, payer: auth.from!.toLowerCase(), amount: auth.value, purpose: listed.notes[0].purpose, cid })
    expect((await ok('list')).notes).toEqual([])
    // the payer's honest retry (the same signed payment, the same request) gets the pin it paid for
    const retry = await fetch(`${second.url}/pins`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-pin-size': '1000', 'payment-signature': encodePaymentSignatureHeader(settled) }, body: JSON.stringify({ cid })
    })
    expect(retry.status).toBe(202)
    expect(await retry.json()).toMatchObject({ requestid: fulfilled.requestid, pin: { cid } })
    await second.stop()
    expect(second.stderr()).not.toMatch(/nothing was recorded/)
    const env = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
    try {
      const pins = new PinLedger(env)
      const payment = pins.payment(killedId)
      expect(payment).toMatchObject({ requestid: fulfilled.requestid, payer: auth.from!.toLowerCase(), amount: auth.value, purpose: listed.notes[0].purpose })
      expect(payment?.tx).toMatch(/^0x[0-9a-f]{64}$/)
      expect(pins.get(fulfilled.requestid)).toMatchObject({ cid, owner: auth.from!.toLowerCase(), months: 1, payment: { id: killedId, tx: payment?.tx } })
    } finally {
      await env.close()
    }
  })

  it('an upload killed after settling is committed from its kept staging folder at the next start', async () => {
    const first = await serve()
    let settled: any
    afterSettle = async (payload) => { settled = payload; await first.stop('SIGKILL') }
    const bytes = randomBytes(1_500_000)
    const form = new FormData()
    form.append('file', new Blob([bytes]), 'kept.bin')
    const r = await payingFetch(chain, payerKey(1))(`${first.url}/upload`, { method: 'POST', body: form }).catch((err: Error) => err)
    afterSettle = undefined
    expect(r).toBeInstanceOf(Error)
    const auth = settled.payload.authorization as Record<string, string>
    const id = `${auth.from!.toLowerCase()}:${auth.nonce!.toLowerCase()}`
    const [note] = (await ok('list')).notes
    expect(note).toMatchObject({ paymentId: id, state: 'unchecked' })
    expect(note.fulfils).toMatch(/^pin bafy/)
    expect((await settlements('list')).out).toMatch(/unchecked .* USDC {2}upload:bafy.* {2}recorded if paid: pin bafy\S+ \([0-9a-f-]{36}\)/)

    const second = await serve()
    const line = await waitFor(() => second.stderr().split('\n').find(l => /the pin it bought is recorded now/.test(l)), 'the fulfilment warning')
    const fulfilled = JSON.parse(line)
    expect(fulfilled).toMatchObject({ payment: id, purpose: `upload:${fulfilled.cid}` })
    const body = Buffer.from(await (await fetch(`${second.url}/ipfs/${fulfilled.cid}`)).arrayBuffer())
    expect(body.equals(bytes)).toBe(true)
    expect((await ok('list')).notes).toEqual([])
    // the honest retry: the same signed payment with the same file answers with the recorded pin
    const again = new FormData()
    again.append('file', new Blob([bytes]), 'kept.bin')
    const retry = await fetch(`${second.url}/upload`, { method: 'POST', headers: { 'payment-signature': encodePaymentSignatureHeader(settled) }, body: again })
    expect(retry.status).toBe(200)
    expect(await retry.json()).toMatchObject({ requestid: fulfilled.requestid, cid: fulfilled.cid, replayed: true })
    await second.stop()
    const env = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
    try {
      const pins = new PinLedger(env)
      expect(pins.get(fulfilled.requestid)).toMatchObject({ cid: fulfilled.cid, status: 'pinned', source: 'upload', name: 'kept.bin', fileSize: bytes.length, payment: { id } })
      expect(pins.payment(id)?.tx).toMatch(/^0x[0-9a-f]{64}$/)
    } finally {
      await env.close()
    }
  })

  it('list, check and close through a running serve', async () => {
    // an upload's note found paid: its bytes went with the request, so it waits for an operator
    const uploadAuth = await signAuthorization(chain, payerKey(1), { value: 3000n })
    await useAuthorization(chain, uploadAuth)
    const waiting = noteFor(uploadAuth, { state: 'paid-unfulfilled', checkedAt: new Date().toISOString() })
    waitingId = waiting.paymentId
    await plant(waiting)
    const pendingAuth = await signAuthorization(chain, payerKey(), { value: 4000n })
    const pending = noteFor(pendingAuth, { at: new Date(Date.now() - 60_000).toISOString() })
    const expired = noteFor(await signAuthorization(chain, payerKey(), { validBefore: nowSeconds() - 3600n }))
    await plant(pending, expired)

    const s = await serve()
    // the start-up pass drops the expired note and keeps the pending one
    const after = await waitFor(async () => {
      const l = await ok('list')
      return byId(l.notes)[pending.paymentId]?.state === 'unused-pending' ? l : undefined
    }, 'the start-up reconciliation')
    expect(Object.keys(byId(after.notes)).sort()).toEqual([waitingId, pending.paymentId].sort())

    // the payer's authorization is used after all (a settle that was still pending): check finds it
    await useAuthorization(chain, pendingAuth)
    const r = await settlements('check', '--json')
    expect(r.code, r.err).toBe(0)
    expect(r.err).toMatch(new RegExp(`via the running pind serve \\(pid ${s.pid}\\)`))
    const checked = JSON.parse(r.out)
    expect(checked).toMatchObject({ via: 'serve', checked: 1, dropped: [], pending: 0, awaitingOperator: 2 })
    expect(checked.confirmed).toEqual([expect.objectContaining({ paymentId: pending.paymentId, amount: '4000', amountUsdc: '0.004000', state: 'paid-unfulfilled' })])
    const text = await settlements('list')
    expect(text.code).toBe(0)
    expect(text.out).toMatch(/2 settlement note\(s\): 2 paid-unfulfilled/)

    const closed = await ok('close', pending.paymentId, '--note', 'refunded in tx 0x1234')
    expect(closed.closed).toMatchObject({ paymentId: pending.paymentId, amount: '4000', operatorNote: 'refunded in tx 0x1234', state: 'paid-unfulfilled' })
    expect(Date.parse(closed.closed.closedAt)).toBeGreaterThan(Date.now() - 60_000)
    const listed = await ok('list', '--closed')
    expect(listed.notes.map((n: any) => n.paymentId)).toEqual([waitingId])
    expect(listed.closed).toEqual([closed.closed])

    const unknown = await settlements('close', `${chain.payers[0]!.address.toLowerCase()}:0x${'ab'.repeat(32)}`, '--note', 'x')
    expect(unknown.code).toBe(1)
    expect(unknown.err).toMatch(/no settlement note/)
    expect((await settlements('close', pending.paymentId, '--note', 'again')).code).toBe(1)
    const noNote = await settlements('close', waitingId)
    expect(noNote.code).toBe(2)
    expect(noNote.err).toMatch(/--note/)
    expect((await settlements('list', '--bogus')).code).toBe(2)
    expect((await settlements('frobnicate')).code).toBe(2)
    expect((await ok('list')).notes.map((n: any) => n.paymentId)).toEqual([waitingId])
    await s.stop()
  })

  it('list, check and close on a stopped data dir', async () => {
    const usedAuth = await signAuthorization(chain, payerKey(), { value: 7000n })
    await useAuthorization(chain, usedAuth)
    const used = noteFor(usedAuth)
    const expired = noteFor(await signAuthorization(chain, payerKey(), { validBefore: nowSeconds() - 600n }))
    const valid = noteFor(await signAuthorization(chain, payerKey()))
    const { validBefore: _, ...legacy } = noteFor(await signAuthorization(chain, payerKey()), { at: new Date(Date.now() - 2 * 3600_000).toISOString() })
    await plant(used, expired, valid, legacy)

    const listed = await settlements('list', '--json')
    expect(listed.code, listed.err).toBe(0)
    expect(listed.err).toMatch(/on the data dir/)
    const all = byId(JSON.parse(listed.out).notes)
    expect(Object.keys(all).sort()).toEqual([waitingId, used.paymentId, expired.paymentId, valid.paymentId, legacy.paymentId].sort())
    expect(all[legacy.paymentId]).toMatchObject({ state: 'unchecked', validBefore: null, validBeforeAt: null })

    // the chain is needed: none given is a usage error; one that does not answer changes nothing
    const noRpc = await settlements('check')
    expect(noRpc.code).toBe(2)
    expect(noRpc.err).toMatch(/--rpc-url/)
    const down = await settlements('check', '--rpc-url', `http://127.0.0.1:${await freePort()}`, '--asset', chain.usdc, '--json')
    expect(down.code).toBe(1)
    expect(down.err).toMatch(/could not be read/)
    expect(JSON.parse(down.out)).toMatchObject({ checked: 0, dropped: [], confirmed: [] })
    expect(JSON.parse((await settlements('list', '--json')).out).notes).toEqual(JSON.parse(listed.out).notes)

    const checked = await ok('check', '--rpc-url', chain.rpcUrl, '--asset', chain.usdc)
    expect(checked).toMatchObject({ via: 'data-dir', checked: 4, pending: 1, awaitingOperator: 2 })
    expect(checked.confirmed.map((n: any) => n.paymentId)).toEqual([used.paymentId])
    expect(checked.dropped.map((n: any) => n.paymentId).sort()).toEqual([expired.paymentId, legacy.paymentId].sort())
    const states = byId((await ok('list')).notes)
    expect(Object.fromEntries(Object.entries(states).map(([id, n]) => [id, n.state]))).toEqual({
      [waitingId]: 'paid-unfulfilled', [used.paymentId]: 'paid-unfulfilled', [valid.paymentId]: 'unused-pending'
    })

    const closed = await ok('close', used.paymentId, '--note', 're-pinned for free as requestid 42')
    expect(closed.via).toBe('data-dir')
    expect((await settlements('close', used.paymentId, '--note', 'twice')).code).toBe(1)
    const env = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
    try {
      const notes = new SettlementNotes(env)
      expect(notes.get(used.paymentId)).toBeUndefined()
      const audit = [...notes.closed()].find(c => c.note.paymentId === used.paymentId)
      expect(audit).toMatchObject({ operatorNote: 're-pinned for free as requestid 42', closedAt: closed.closed.closedAt, note: { paymentId: used.paymentId, amount: '7000', state: 'paid-unfulfilled' } })
      expect([...notes.closed()]).toHaveLength(2)
    } finally {
      await env.close()
    }
  })
})
