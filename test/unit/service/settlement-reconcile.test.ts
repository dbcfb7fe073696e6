/**
 * Reconciling settlement notes on a real LMDB ledger against the real test
 * token on anvil: a note whose authorization was used on chain becomes
 * paid-unfulfilled (one warning, never read again); unused and expired notes
 * are dropped; unused and still valid ones are kept; an unreachable RPC
 * changes nothing and throws nothing; notes of requests still settling, and
 * notes their request recorded meanwhile, are left alone; serve's background
 * loop retries after a failure.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../../scripts/devchain/index.mjs'
import { openLmdbLedger, type LmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import type { PinLedger } from '../../../src/ledger/pins.js'
import type { SettlementNotes, SettlingRecord } from '../../../src/ledger/settlements.js'
import type { UploadTicket } from '../../../src/ledger/tickets.js'
import { CID } from 'multiformats/cid'
import { createLogger, type Logger } from '../../../src/kernel/log.js'
import { authorizationStateReader, type AuthorizationStateReader } from '../../../src/payment/authorization-state.js'
import { blockName } from '../../../src/ipfs/block-backend.js'
import { CommitLock } from '../../../src/ipfs/commit-lock.js'
import { importFile } from '../../../src/ipfs/import.js'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { BlockStaging } from '../../../src/ipfs/staging.js'
import { settlementActions, stagingInUse, type FulfilDeps } from '../../../src/service/payments/settlement-fulfil.js'
import { reconcileSettlements, settlementReconciler } from '../../../src/service/payments/settlement-reconcile.js'
import { noteFor, nowSeconds, signAuthorization, useAuthorization } from '../../helpers/authorizations.js'
import { tempDir } from '../../helpers/pind.js'
import { freePort, waitFor } from '../../helpers/ports.js'
import { pinRecord } from '../../helpers/records.js'

let chain: DevChain
let real: AuthorizationStateReader
let dir: string
let ledger: LmdbLedger
let pins: PinLedger
let notes: SettlementNotes
let staging: BlockStaging
let logged: Array<{ level: string, msg: string, [k: string]: unknown }>
let log: Logger

/** the real reader, counting what it is asked */
function counting (r: AuthorizationStateReader): AuthorizationStateReader & { reads: string[] } {
  const reads: string[] = []
  return { reads, chainTime: async () => await r.chainTime(), isUsed: async (a, n) => { reads.push(`${a.toLowerCase()}:${n}`); return await r.isUsed(a, n) }, usedIn: async (a, n) => await r.usedIn(a, n) }
}
const payerKey = (): `0x${string}` => chain.payers[0]!.privateKey
const fulfilDeps = (): FulfilDeps => ({ ledger: pins, staging, blocks: new FsBackend(join(dir, 'blocks')), lock: new CommitLock() })
const stored = async (): Promise<Record<string, unknown>> => Object.fromEntries((await notes.all()).map(n => [n.paymentId, n]))

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  real = authorizationStateReader({ network: 'eip155:167000', rpcUrl: chain.rpcUrl, asset: chain.usdc })
})
afterAll(async () => { await chain?.stop() })
beforeEach(async () => {
  dir = tempDir('pind-settle-')
  ledger = await openLmdbLedger(join(dir, 'ledger.mdb'), { graceMs: () => 0 })
  pins = ledger.pins
  notes = ledger.notes
  staging = new BlockStaging(new FsBackend(join(dir, 'blocks')), join(dir, 'staging'))
  await staging.sweepLeftovers()
  logged = []
  log = createLogger({ level: 'debug', write: (l) => { logged.push(JSON.parse(l)) } })
})
afterEach(async () => {
  await ledger.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('reconcileSettlements', () => {
  it('marks a note whose authorization was used on chain paid-unfulfilled, warns once, and reads it no more', async () => {
    const used = await signAuthorization(chain, payerKey(), { value: 2500n })
    await useAuthorization(chain, used)
    const note = noteFor(used)
    await pins.markSettling(note)
    const reader = counting(real)

    const r = await reconcileSettlements(notes, reader, log)
    expect(r.error).toBeUndefined()
    expect(r.checked).toBe(1)
    expect(r.confirmed.map(n => n.paymentId)).toEqual([note.paymentId])
    expect(r.awaitingOperator).toBe(1)
    const after = await notes.get(note.paymentId)
    expect(after?.state).toBe('paid-unfulfilled')
    expect(Date.parse(after?.checkedAt ?? '')).toBeGreaterThan(Date.now() - 60_000)
    const warnings = logged.filter(l => l.level === 'warn')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatchObject({ payer: note.payer, amount: '2500', amountUsdc: '0.002500', purpose: note.purpose, payment: note.paymentId })

    const again = await reconcileSettlements(notes, reader, log)
    expect(reader.reads).toHaveLength(1) // not read again
    expect(again.confirmed).toEqual([])
    expect(again.awaitingOperator).toBe(1)
    expect(logged.filter(l => l.level === 'warn')).toHaveLength(1)
    expect(await notes.get(note.paymentId)).toEqual(after)
  })

  it('fulfils a paid note that says what it bought: the pin and its payment are recorded, the note goes, the fetch window starts over', async () => {
    const used = await signAuthorization(chain, payerKey(), { value: 1000n })
    const usedTx = await useAuthorization(chain, used)
    const payer = used.from.toLowerCase()
    const cid = 'bafkreihvkcqihwud2tcr4qltcygi5ostxqsc4gkde6cgpoyuz6gw5z2ila'
    const created = new Date(Date.now() - 3 * 3600_000)
    const draft = pinRecord('req-fulfil', cid, {
      owner: payer, status: 'queued', created: created.toISOString(), createdUs: created.getTime() * 1000, maxBytes: 5000,
      payment: { id: `${payer}:${used.nonce.toLowerCase()}`, payer, amount: '1000', network: 'eip155:167000', asset: chain.usdc, method: 'x402' },
      fetch: { attempts: 0, giveUpAt: new Date(created.getTime() + 3600_000).toISOString() }
    })
    const note = noteFor(used, { purpose: `pin:${cid}:1`, fulfil: { pin: draft, proof: 'sha256-of-the-authorization' } })
    // and one that cannot be fulfilled: the pin it replaces is gone
    const other = await signAuthorization(chain, payerKey(), { value: 1000n })
    await useAuthorization(chain, other)
    const replacing = noteFor(other, { purpose: `replace:req-gone:${cid}:1`, fulfil: { pin: pinRecord('req-replacing', cid, { owner: payer, status: 'queued', replaces: 'req-gone' }), proof: 'p2' } })
    for (const n of [note, replacing]) await pins.markSettling(n)

    const r = await reconcileSettlements(notes, real, log, settlementActions(fulfilDeps()))
    expect(r.error).toBeUndefined()
    expect(r.fulfilled.map(f => [f.note.paymentId, f.pin.requestid])).toEqual([[note.paymentId, 'req-fulfil']])
    expect(r.confirmed.map(n => n.paymentId)).toEqual([replacing.paymentId])
    expect(await notes.get(note.paymentId)).toBeUndefined()
    expect((await notes.get(replacing.paymentId))?.state).toBe('paid-unfulfilled')

    const pin = await pins.get('req-fulfil')
    expect(pin).toMatchObject({ owner: payer, cid, status: 'queued', maxBytes: 5000, payment: { id: note.paymentId, amount: '1000' } })
    expect(Date.parse(pin?.fetch?.giveUpAt ?? '')).toBeGreaterThan(Date.now() + 3500_000)
    expect(await pins.payment(note.paymentId)).toMatchObject({ requestid: 'req-fulfil', purpose: `pin:${cid}:1`, payer, amount: '1000', proof: 'sha256-of-the-authorization', tx: usedTx })
    expect(pin?.payment.tx).toBe(usedTx)
    expect(await pins.payment(replacing.paymentId)).toBeUndefined()
    const warned = logged.filter(l => l.level === 'warn').map(l => l.msg)
    expect(warned.filter(m => /the pin it bought is recorded now/.test(m))).toHaveLength(1)
    expect(warned.filter(m => /cannot be fulfilled: the pin it replaces \(req-gone\) was removed/.test(m))).toHaveLength(1)

    // without a fulfiller (or for an upload, which has nothing to fulfil) a paid note waits for an operator
    const bare = await signAuthorization(chain, payerKey(), { value: 1000n })
    await useAuthorization(chain, bare)
    await pins.markSettling(noteFor(bare, { fulfil: { pin: pinRecord('req-bare', cid, { status: 'queued' }), proof: 'p3' } }))
    const r2 = await reconcileSettlements(notes, real, log)
    expect(r2.fulfilled).toEqual([])
    expect(r2.confirmed).toHaveLength(1)
    expect(await pins.get('req-bare')).toBeUndefined()
  })

  it('fulfils a paid upload ticket: the ticket and its payment are recorded, the note goes, and the ticket can be claimed', async () => {
    const used = await signAuthorization(chain, payerKey(), { value: 3000n })
    const usedTx = await useAuthorization(chain, used)
    const payer = used.from.toLowerCase()
    const id = '6f1c0d3e-2b7a-4c1e-9f3a-1d2e3f4a5b6c'
    const draft: UploadTicket = {
      id, payer, bytes: 4096, months: 2, amount: '3000', paymentId: `${payer}:${used.nonce.toLowerCase()}`, network: 'eip155:167000', asset: chain.usdc,
      createdAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 86400_000).toISOString()
    }
    const note = noteFor(used, { purpose: `ticket:${id}`, fulfil: { ticket: draft, proof: 'sha256-of-the-ticket-authorization' } })
    await pins.markSettling(note)
    const r = await reconcileSettlements(notes, real, log, settlementActions({ ...fulfilDeps(), tickets: ledger }))
    expect(r.error).toBeUndefined()
    expect(r.fulfilled.map(f => [f.note.paymentId, f.pin.requestid])).toEqual([[note.paymentId, id]])
    expect(await notes.get(note.paymentId)).toBeUndefined()
    expect(await ledger.tickets.get(id)).toMatchObject({ payer, bytes: 4096, months: 2, tx: usedTx })
    expect(await pins.payment(note.paymentId)).toMatchObject({ requestid: id, purpose: `ticket:${id}`, payer, amount: '3000', proof: 'sha256-of-the-ticket-authorization', tx: usedTx })
    // usable by its payer, once
    const cid = 'bafkreihvkcqihwud2tcr4qltcygi5ostxqsc4gkde6cgpoyuz6gw5z2ila'
    const pin = pinRecord('req-ticket', cid, { owner: payer, status: 'pinned', payment: { id: note.paymentId, payer, amount: '3000', network: 'eip155:167000', asset: chain.usdc, method: 'x402', tx: usedTx } })
    const claim = async (p: typeof pin): Promise<void> => {
      await ledger.transaction(async (tx) => {
        await tx.claimTicket(id, payer, p.requestid)
        await tx.createPin(p, undefined, [cid])
      })
    }
    await claim(pin)
    expect(await pins.get('req-ticket')).toMatchObject({ owner: payer, cid, payment: { id: note.paymentId } })
    await expect(claim(pinRecord('req-ticket-2', cid, { owner: payer, status: 'pinned' }))).rejects.toMatchObject({ why: 'used' })
    expect(await pins.get('req-ticket-2')).toBeUndefined()
  })

  it('fulfils a paid renewal: the pin is extended by the months paid for, once', async () => {
    const used = await signAuthorization(chain, payerKey(), { value: 2000n })
    const usedTx = await useAuthorization(chain, used)
    const payer = used.from.toLowerCase()
    const until = new Date(Date.now() + 86400_000)
    await pins.create(pinRecord('req-renew', 'bafkreihvkcqihwud2tcr4qltcygi5ostxqsc4gkde6cgpoyuz6gw5z2ila', { owner: payer, pinnedUntil: until.toISOString(), months: 1 }))
    const note = noteFor(used, { purpose: `renew:req-renew:2:${until.toISOString()}`, fulfil: { proof: 'p', renew: { requestid: 'req-renew', months: 2 } } })
    await pins.markSettling(note)

    const r = await reconcileSettlements(notes, real, log, settlementActions(fulfilDeps()))
    expect(r.fulfilled.map(f => f.pin.requestid)).toEqual(['req-renew'])
    const pin = await pins.get('req-renew')
    const expected = new Date(until)
    expected.setUTCMonth(expected.getUTCMonth() + 2)
    expect(Math.abs(Date.parse(pin?.pinnedUntil ?? '') - expected.getTime())).toBeLessThan(4 * 86400_000)
    expect(Date.parse(pin?.pinnedUntil ?? '')).toBeGreaterThan(until.getTime() + 55 * 86400_000)
    expect(pin?.months).toBe(3)
    expect(await pins.payment(note.paymentId)).toMatchObject({ requestid: 'req-renew', purpose: note.purpose, tx: usedTx, amount: '2000' })
    expect(await notes.get(note.paymentId)).toBeUndefined()
    expect((await reconcileSettlements(notes, real, log, settlementActions(fulfilDeps()))).fulfilled).toEqual([])
  })

  it.each(['files', 'log'] as const)('fulfils a paid upload from its sealed staging folder (kept across a restart), block by block; a bad block or a dropped note frees the folder (staged as %s)', async (layout) => {
    const store = new FsBackend(join(dir, 'blocks'))
    staging = new BlockStaging(store, join(dir, 'staging'), undefined, () => layout)
    const stage = async (bytes: Uint8Array): Promise<{ id: string, cid: string, blocks: string[], bytes: number }> => {
      const staged = await staging.begin()
      const r = await importFile((async function * () { yield bytes })(), { blockstore: staged.blockstore, chunker: staged.chunker(), maxBytes: bytes.length })
      await staging.seal(staged)
      return { id: staged.id, cid: r.cid.toString(), blocks: staged.cids.map(String), bytes: staged.bytes }
    }
    const uploadNote = async (s: Awaited<ReturnType<typeof stage>>, opts: { used: boolean, validBefore?: bigint }): Promise<SettlingRecord> => {
      const a = await signAuthorization(chain, payerKey(), { value: 2000n, ...(opts.validBefore != null ? { validBefore: opts.validBefore } : {}) })
      if (opts.used) await useAuthorization(chain, a)
      const payer = a.from.toLowerCase()
      const draft = pinRecord(`req-${s.id}`, s.cid, { owner: payer, status: 'pinned', source: 'upload', dagSize: s.bytes, payment: { id: '', payer, amount: '2000', network: 'eip155:167000', asset: chain.usdc, method: 'x402' } })
      const note = noteFor(a, { purpose: `upload:${s.cid}`, fulfil: { pin: draft, proof: 'proof', upload: { staging: s.id, blocks: s.blocks } } })
      await pins.markSettling(note)
      return note
    }
    const good = await stage(randomBytes(2_500_000)) // 3 leaves and a root
    const bad = await stage(randomBytes(1_500_000))
    const expired = await stage(randomBytes(10_000))
    const goodNote = await uploadNote(good, { used: true })
    const badNote = await uploadNote(bad, { used: true })
    await uploadNote(expired, { used: false, validBefore: nowSeconds() - 3600n })
    // a restart: the sweep keeps exactly the folders the notes need
    const stray = await staging.begin()
    expect(stagingInUse(await notes.all())).toEqual(new Set([good.id, bad.id, expired.id]))
    expect(await staging.sweepLeftovers(stagingInUse(await notes.all()))).toBe(1)
    expect(existsSync(join(dir, 'staging', stray.id))).toBe(false)
    // one of bad's blocks was torn (a leaf's file; or one byte of the staging log, inside the first block)
    const torn = join(dir, 'staging', bad.id, readdirSync(join(dir, 'staging', bad.id)).find(f => f.endsWith(layout === 'files' ? '.data' : '.log')) as string)
    if (layout === 'files') writeFileSync(torn, 'torn')
    else {
      const log = readFileSync(torn)
      const at = log.length >> 1
      log[at] = (log[at] as number) ^ 0xff
      writeFileSync(torn, log)
    }

    const r = await reconcileSettlements(notes, real, log, settlementActions(fulfilDeps()))
    expect(r.error).toBeUndefined()
    expect(r.fulfilled.map(f => f.pin.cid)).toEqual([good.cid])
    expect(r.confirmed.map(n => n.paymentId)).toEqual([badNote.paymentId])
    expect(r.dropped).toHaveLength(1)
    // the good upload is in the blockstore, referenced by its pin, paid with the transaction on chain
    const pin = await pins.get(`req-${good.id}`)
    expect(pin).toMatchObject({ cid: good.cid, status: 'pinned', source: 'upload', payment: { id: goodNote.paymentId } })
    expect(pin?.payment.tx).toMatch(/^0x[0-9a-f]{64}$/)
    for (const b of good.blocks) expect(ledger.servedBlocks().isPinnedBlock(CID.parse(b))).toBe(true)
    // and nothing else is: each good block, once (its leaves as files, its root packed in small.mdb)
    for (const b of good.blocks) expect(await store.read(CID.parse(b))).toBeDefined()
    expect((await store.usage()).blocks).toBe(new Set(good.blocks).size)
    const blockFiles = readdirSync(join(dir, 'blocks'), { recursive: true }).filter(f => String(f).endsWith('.data'))
    expect(blockFiles).toHaveLength(3)
    // every kept folder is gone: committed, unusable (paid-unfulfilled, for an operator), or dropped
    expect(readdirSync(join(dir, 'staging'))).toEqual([])
    expect((await notes.get(badNote.paymentId))?.state).toBe('paid-unfulfilled')
    expect(logged.some(l => /cannot be fulfilled: the upload's staged blocks cannot be used: block .* does not hash to its CID/.test(l.msg))).toBe(true)
  })

  it('fulfils a paid upload whose blocks went straight to the store (no staging folder) once each is found there; one missing leaves the note to an operator', async () => {
    const store = new FsBackend(join(dir, 'blocks'))
    staging = new BlockStaging(store, join(dir, 'staging'))
    /** blocks written to the store as a direct upload's are (here through a commit), and the note naming them alone */
    const written = async (bytes: Uint8Array): Promise<{ cid: string, blocks: string[], bytes: number }> => {
      const staged = await staging.begin()
      const r = await importFile((async function * () { yield bytes })(), { blockstore: staged.blockstore, chunker: staged.chunker(), maxBytes: bytes.length })
      await staging.seal(staged)
      await staging.commit(staged)
      await staging.discard(staged)
      return { cid: r.cid.toString(), blocks: staged.cids.map(String), bytes: staged.bytes }
    }
    const uploadNote = async (w: Awaited<ReturnType<typeof written>>): Promise<SettlingRecord> => {
      const a = await signAuthorization(chain, payerKey(), { value: 2000n })
      await useAuthorization(chain, a)
      const payer = a.from.toLowerCase()
      const draft = pinRecord(`req-${w.cid.slice(-8)}`, w.cid, { owner: payer, status: 'pinned', source: 'upload', dagSize: w.bytes, payment: { id: '', payer, amount: '2000', network: 'eip155:167000', asset: chain.usdc, method: 'x402' } })
      const note = noteFor(a, { purpose: `upload:${w.cid}`, fulfil: { pin: draft, proof: 'proof', upload: { blocks: w.blocks } } })
      await pins.markSettling(note)
      return note
    }
    const good = await written(randomBytes(2_500_000))
    const gone = await written(randomBytes(1_500_000))
    const goodNote = await uploadNote(good)
    const goneNote = await uploadNote(gone)
    // no folder to keep for either
    expect(stagingInUse(await notes.all())).toEqual(new Set())
    // one of gone's leaves is not in the store (a note does not keep blocks from an operator's hands)
    const leaf = CID.parse(gone.blocks[0] as string)
    await store.remove([{ name: blockName(leaf) }])
    expect(await store.read(leaf)).toBeUndefined()

    const r = await reconcileSettlements(notes, real, log, settlementActions(fulfilDeps()))
    expect(r.error).toBeUndefined()
    expect(r.fulfilled.map(f => f.pin.cid)).toEqual([good.cid])
    expect(r.confirmed.map(n => n.paymentId)).toEqual([goneNote.paymentId])
    const pin = await pins.get(`req-${good.cid.slice(-8)}`)
    expect(pin).toMatchObject({ cid: good.cid, status: 'pinned', payment: { id: goodNote.paymentId } })
    for (const b of good.blocks) expect(ledger.servedBlocks().isPinnedBlock(CID.parse(b))).toBe(true)
    expect(await pins.get(`req-${gone.cid.slice(-8)}`)).toBeUndefined()
    expect((await notes.get(goneNote.paymentId))?.state).toBe('paid-unfulfilled')
    expect(logged.some(l => new RegExp(`cannot be fulfilled: 1 of the upload's 3 blocks are not in the block store \\(${leaf.toString()} first\\)`).test(l.msg))).toBe(true)
  })

  it('drops unused notes that can no longer be used and keeps those that still can', async () => {
    const expired = noteFor(await signAuthorization(chain, payerKey(), { validBefore: nowSeconds() - 3600n }))
    const valid = noteFor(await signAuthorization(chain, payerKey(), { validBefore: nowSeconds() + 3600n }))
    const { validBefore: _a, ...oldLegacy } = noteFor(await signAuthorization(chain, payerKey()), { at: new Date(Date.now() - 2 * 3600_000).toISOString() })
    const { validBefore: _b, ...newLegacy } = noteFor(await signAuthorization(chain, payerKey()), { at: new Date(Date.now() - 60_000).toISOString() })
    for (const n of [expired, valid, oldLegacy, newLegacy]) await pins.markSettling(n)

    const r = await reconcileSettlements(notes, real, log)
    expect(r.error).toBeUndefined()
    expect(r.checked).toBe(4)
    expect(r.dropped.map(n => n.paymentId).sort()).toEqual([expired.paymentId, oldLegacy.paymentId].sort())
    expect(r.confirmed).toEqual([])
    expect(r.pending).toBe(2)
    expect(Object.keys(await stored()).sort()).toEqual([valid.paymentId, newLegacy.paymentId].sort())
    expect((await notes.get(valid.paymentId))?.state).toBe('unused-pending')
    expect((await notes.get(newLegacy.paymentId))?.state).toBe('unused-pending')
    const dropped = logged.filter(l => l.level === 'info' && /dropped/.test(l.msg))
    expect(dropped.map(l => l.payment).sort()).toEqual([expired.paymentId, oldLegacy.paymentId].sort())
    expect(logged.filter(l => l.level === 'warn')).toEqual([])

    // once used on chain, a pending note is confirmed at the next pass
    const a = await signAuthorization(chain, payerKey())
    const pending = noteFor(a)
    await pins.markSettling(pending)
    expect((await reconcileSettlements(notes, real, log)).pending).toBe(3)
    await useAuthorization(chain, a)
    const r2 = await reconcileSettlements(notes, real, log)
    expect(r2.confirmed.map(n => n.paymentId)).toEqual([pending.paymentId])
    expect((await notes.get(pending.paymentId))?.state).toBe('paid-unfulfilled')
  })

  it('changes nothing and throws nothing when the RPC cannot be reached', async () => {
    const used = await signAuthorization(chain, payerKey())
    await useAuthorization(chain, used)
    await pins.markSettling(noteFor(used))
    await pins.markSettling(noteFor(await signAuthorization(chain, payerKey(), { validBefore: nowSeconds() - 3600n })))
    const before = await stored()
    const down = authorizationStateReader({ network: 'eip155:167000', rpcUrl: `http://127.0.0.1:${await freePort()}`, asset: chain.usdc }, 2000)

    const r = await reconcileSettlements(notes, down, log)
    expect(r.error).toMatch(/could not be read/)
    expect(r.checked).toBe(0)
    expect(r.dropped).toEqual([])
    expect(r.confirmed).toEqual([])
    expect(await stored()).toEqual(before)
    expect(r.error).not.toMatch(/127\.0\.0\.1/) // the RPC URL may carry an API key: never in messages

    // an RPC of another chain is refused, not believed
    const wrongChain = authorizationStateReader({ network: 'eip155:1', rpcUrl: chain.rpcUrl, asset: chain.usdc })
    expect((await reconcileSettlements(notes, wrongChain, log)).error).toMatch(/chain 167000, not eip155:1/)
    expect(await stored()).toEqual(before)
  })

  it('leaves the notes of requests that may still be settling, and never writes back a note recorded meanwhile', async () => {
    const a = await signAuthorization(chain, payerKey())
    await useAuthorization(chain, a)
    const young = noteFor(a)
    await pins.markSettling(young)
    const reader = counting(real)
    const r = await reconcileSettlements(notes, reader, log, { liveSince: new Date(Date.now() - 60_000) })
    expect(r.inFlight).toBe(1)
    expect(reader.reads).toEqual([])
    expect((await notes.get(young.paymentId))?.state).toBeUndefined()

    // the request records its pin while the chain is being read: the note goes with it, for good
    const racing: AuthorizationStateReader = {
      chainTime: async () => await real.chainTime(),
      isUsed: async (who, nonce) => {
        const p = pinRecord('r1', 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', { owner: young.payer })
        await pins.create(p, { id: young.paymentId, requestid: 'r1', purpose: young.purpose, payer: young.payer, amount: young.amount, network: 'eip155:167000', at: p.created, proof: 'x' })
        return await real.isUsed(who, nonce)
      },
      usedIn: async (who, nonce) => await real.usedIn(who, nonce)
    }
    const raced = await reconcileSettlements(notes, racing, log)
    expect(raced.checked).toBe(1)
    expect(raced.confirmed).toEqual([])
    expect(await notes.get(young.paymentId)).toBeUndefined()
    expect(logged.filter(l => l.level === 'warn')).toEqual([])
  })

  it('among front ends sharing a ledger: a live one\'s notes are its own, a dead one\'s are reconciled at once, an upload\'s waits for the one that staged it; a note whose request is over is not in flight', async () => {
    const liveSince = new Date(Date.now() - 60_000)
    const note = async (by: string | undefined, fulfil?: SettlingRecord['fulfil']): Promise<SettlingRecord> => {
      const a = await signAuthorization(chain, payerKey())
      await useAuthorization(chain, a)
      const n = { ...noteFor(a, fulfil != null ? { fulfil } : {}), ...(by != null ? { by } : {}) }
      await pins.markSettling(n)
      return n
    }
    // written after this front end started, so all young: by itself, by a live other, by one that died
    const mine = await note('fe-self')
    const live = await note('fe-live')
    const dead = await note('fe-dead')
    // a paid upload the dead one staged on its own disk: nothing here to record it from
    const upload = await note('fe-dead', { proof: 'p', pin: pinRecord('req-up', 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', { status: 'pinned' }), upload: { staging: '0b6cdb43-35d5-4d6b-9b3b-43a6a4a4c3a1', blocks: ['bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'] } })
    const alive = new Set(['fe-self', 'fe-live'])
    const r = await reconcileSettlements(notes, real, log, { liveSince, self: 'fe-self', alive, ...settlementActions(fulfilDeps()) })
    expect(r.error).toBeUndefined()
    expect(r.inFlight).toBe(2)
    expect(r.confirmed.map(n => n.paymentId)).toEqual([dead.paymentId])
    expect((await notes.get(mine.paymentId))?.state).toBeUndefined()
    expect((await notes.get(live.paymentId))?.state).toBeUndefined()
    expect(await notes.get(upload.paymentId)).toEqual(upload)

    // the live one's own pass (it does not hold the lease) reads its notes alone; the one that staged the upload, back, records it or hands it on
    const own = await reconcileSettlements(notes, real, log, { self: 'fe-live', alive, ownOnly: true })
    expect(own.confirmed.map(n => n.paymentId)).toEqual([live.paymentId])
    const back = await reconcileSettlements(notes, real, log, { self: 'fe-dead', alive: new Set(['fe-dead']), ownOnly: true, ...settlementActions(fulfilDeps()) })
    expect(back.confirmed.map(n => n.paymentId)).toEqual([upload.paymentId])

    // its own young note is in flight only while its request runs: once that is over (its record failed), it is read at once
    const running = new Set([mine.paymentId])
    expect((await reconcileSettlements(notes, real, log, { liveSince, self: 'fe-self', alive, running: (id) => running.has(id) })).inFlight).toBe(1)
    running.clear()
    const over = await reconcileSettlements(notes, real, log, { liveSince, self: 'fe-self', alive, running: (id) => running.has(id) })
    expect(over.confirmed.map(n => n.paymentId)).toEqual([mine.paymentId])
  })
})

describe('the background reconciler', () => {
  it('says at start what is left, retries after the RPC fails, and stops', async () => {
    const a = await signAuthorization(chain, payerKey())
    await useAuthorization(chain, a)
    const leftover = noteFor(a, { at: new Date(Date.now() - 5000).toISOString() })
    await pins.markSettling(leftover)
    const down = authorizationStateReader({ network: 'eip155:167000', rpcUrl: `http://127.0.0.1:${await freePort()}`, asset: chain.usdc }, 2000)
    let reachable = false
    const switching: AuthorizationStateReader = {
      chainTime: async () => await (reachable ? real : down).chainTime(),
      isUsed: async (who, nonce) => await (reachable ? real : down).isUsed(who, nonce),
      usedIn: async (who, nonce) => await (reachable ? real : down).usedIn(who, nonce)
    }
    const reconciler = settlementReconciler(notes, switching, { intervalMs: 50, log, startedAt: new Date() })
    reconciler.start()
    try {
      // the summary reads the notes asynchronously: it is logged once that read answers
      await waitFor(() => logged.find(l => l.msg.startsWith('1 settlement notes to reconcile')), 'the summary at start', 5_000)
      await waitFor(() => logged.find(l => l.level === 'warn' && /could not be reconciled; retrying/.test(l.msg)), 'a failed pass')
      expect((await notes.get(leftover.paymentId))?.state).toBeUndefined()
      reachable = true
      await waitFor(async () => (await notes.get(leftover.paymentId))?.state === 'paid-unfulfilled' ? true : undefined, 'the retry')
      const report = await reconciler.run()
      expect(report).toMatchObject({ checked: 0, awaitingOperator: 1 })
    } finally {
      await reconciler.stop()
    }
    const count = logged.length
    await pins.markSettling(noteFor(await signAuthorization(chain, payerKey(), { validBefore: nowSeconds() - 3600n }), { at: new Date(0).toISOString() }))
    await new Promise(resolve => setTimeout(resolve, 200)) // four intervals: a stopped reconciler must not run
    expect(logged.length).toBe(count)
    expect(await notes.all()).toHaveLength(2)
  })
})
