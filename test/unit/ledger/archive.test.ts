/**
 * The archive (src/ledger/lmdb/archive.ts) on real LMDB: removed pins move with
 * the payments that created them from ledger.mdb to ledger-archive.mdb, and
 * nothing an export, the counts or the block references show changes; the
 * ledger file stops growing once removals are archived; a move cut short
 * between its two commits reads once and finishes on the next call.
 */
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { addMonths, nextCreated } from '../../../src/ledger/clock.js'
import { newRequestid } from '../../../src/ledger/requestid.js'
import { exportLedger, parseExportOptions, type ExportRequest } from '../../../src/service/admin/ledger-export.js'
import { startArchiver } from '../../../src/service/background/archiver.js'
import { checkImport } from '../../../src/service/admin/ledger-import.js'
import { open } from 'lmdb'
import { paidWrites } from '../../../scripts/bench-ledger-growth.mjs'
import { closeTestLedgers, contractOf, openTestLedger, textOf, type TestLedger } from '../../helpers/ledger.js'
import { OWNER, paidPin } from '../../helpers/records.js'
import type { PaymentRecord } from '../../../src/ledger/records.js'
import { createLogger } from '../../../src/kernel/log.js'
import { PaymentReusedError } from '../../../src/ledger/lmdb/pins.js'

afterEach(async () => { await closeTestLedgers() })

const CLOCK = { nextCreated, addMonths, newRequestid }
const FUTURE = new Date('2099-01-01T00:00:00.000Z')
const REQUESTS: ExportRequest[] = [{}, { withBlocks: true }, { format: 'csv', records: 'payments', status: 'removed' }, { status: 'pinned,removed' }, { format: 'csv', records: 'pins' }]

const exportOf = async (t: TestLedger, request: ExportRequest, now: Date): Promise<string> =>
  await textOf(exportLedger(contractOf(t), parseExportOptions(request), now).chunks)
async function exportsOf (t: TestLedger, now: Date): Promise<string[]> {
  const out: string[] = []
  for (const r of REQUESTS) out.push(await exportOf(t, r, now))
  return out
}
const entries = (t: TestLedger, db: string, opts?: { keyEncoding?: 'binary' }): number => (t.env.db(db, opts).getStats() as { entryCount: number }).entryCount
const pagesOf = (t: TestLedger, db: string, keyEncoding?: 'binary'): number => {
  const st = t.env.db(db, keyEncoding != null ? { keyEncoding } : undefined).getStats() as { treeBranchPageCount: number, treeLeafPageCount: number, overflowPages: number }
  return st.treeBranchPageCount + st.treeLeafPageCount + st.overflowPages
}
const ledgerPayments = (t: TestLedger): number => entries(t, 'payments') + entries(t, 'payments-binary', { keyEncoding: 'binary' })

async function archiveAll (t: TestLedger, cutoff = FUTURE): Promise<number> {
  return await t.ledger.archiveDue(cutoff)
}

/**
 * A ledger of `n` paid writes (all but two of each payer's removed) with the archive's half of a move of every
 * removed pin done: the process died before the ledger's delete. Its exports are as before.
 */
async function halfMoved (n: number, payers: number, seed: number): Promise<{ t: TestLedger, now: Date, before: string[], payments: PaymentRecord[] }> {
  const t = await openTestLedger({ upgrade: true })
  await paidWrites(CLOCK, t.ledger, { n, live: 2, seed, payers, byCid: 0, renew: 0, maxBlocks: 1 })
  const now = new Date()
  const before = await exportsOf(t, now)
  const removed = [...t.ledger.all()].filter(p => p.removed != null)
  const payments = [...t.ledger.allPayments()].filter(p => removed.some(r => r.requestid === p.requestid))
  await t.env.archive.put(removed, payments)
  expect(await exportsOf(t, now)).toEqual(before)
  return { t, now, before, payments }
}

describe('the ledger archive', () => {
  it('moves removed pins and their payments out of ledger.mdb; exports, counts and block references stay the same', async () => {
    const t = await openTestLedger({ upgrade: true })
    await paidWrites(CLOCK, t.ledger, { n: 400, live: 4, seed: 3, payers: 8, byCid: 0.2, renew: 0.1, maxBlocks: 3 })
    const now = new Date()
    const before = await exportsOf(t, now)
    const counts = t.ledger.countByStatus(now)
    const refs = [...t.ledger.referencedBlocks()].sort()
    const renewals = [...t.ledger.allPayments()].filter(p => p.purpose.startsWith('renew:')).length
    const removedOne = [...t.ledger.all()].find(p => p.removed != null)?.requestid
    expect(counts.removed).toBe(400 - 32)
    expect(existsSync(join(t.dir, 'ledger-archive.mdb'))).toBe(false)

    expect(await archiveAll(t)).toBe(368)
    expect(entries(t, 'pins')).toBe(32)
    expect(entries(t, 'pins-removed')).toBe(0)
    // what stays: the live pins' payments and every renewal's (a renewal's purpose does not lean on its pin's record)
    expect(ledgerPayments(t)).toBe(32 + renewals)
    expect(existsSync(join(t.dir, 'ledger-archive.mdb'))).toBe(true)

    expect(await exportsOf(t, now)).toEqual(before)
    expect(t.ledger.countByStatus(now)).toEqual(counts)
    expect([...t.ledger.referencedBlocks()].sort()).toEqual(refs)
    // serve's own reads do not see an archived pin (a GET of it: 404, as for a removed one); an export's and import's do
    const gone = removedOne as string
    expect(t.ledger.get(gone)).toBeUndefined()
    expect(t.ledger.known(gone)).toBe(true)
    expect(await archiveAll(t)).toBe(0)
  })

  it('import-ledger --merge refuses the requestids and payments the archive holds, with the archive opened once for the whole check', async () => {
    const t = await openTestLedger({ upgrade: true })
    await paidWrites(CLOCK, t.ledger, { n: 4, live: 1, seed: 4, payers: 2, byCid: 0, renew: 0, maxBlocks: 1 })
    const lines = (await exportOf(t, {}, new Date())).split('\n').filter(l => l !== '')
    const removed = [...t.ledger.all()].find(p => p.removed != null) as { requestid: string, payment: { id: string } }
    expect(await archiveAll(t)).toBe(2)
    const archive = t.env.archive as unknown as { openDbs: () => unknown, dbs?: unknown }
    let opened = 0
    const openDbs = archive.openDbs.bind(archive)
    archive.openDbs = () => { if (archive.dbs == null) opened++; return openDbs() }
    const err = await checkImport(async function * () { yield * lines }, contractOf(t), { merge: true }).then(() => undefined, (e: Error) => e)
    expect(err?.message).toContain(`pin ${removed.requestid} is already in the ledger`)
    expect(err?.message).toContain(`payment ${removed.payment.id} is already in the ledger`)
    expect(opened).toBe(1)
  })

  it('refuses an archive of a schema version it does not know', async () => {
    const t = await openTestLedger({ upgrade: true })
    await t.env.archive.put([], [])
    const path = join(t.dir, 'ledger-archive.mdb')
    const other = open({ path, maxDbs: 4 })
    await other.openDB({ name: 'meta' }).put('schemaVersion', 2)
    await other.close()
    expect(() => t.env.archive.lease()).toThrow(/ledger archive .* has schema version 2; this pind understands 1/)
  })

  it('leaves ledger.mdb its size once removals are archived, where it grows with every write without', async () => {
    const sizes = async (archive: boolean): Promise<number[]> => {
      const t = await openTestLedger({ upgrade: true })
      const out: number[] = []
      for (let round = 0; round < 5; round++) {
        // each round's payers are new (a seed of its own) and keep nothing: the live set stays empty, as it is steady in a long run
        await paidWrites(CLOCK, t.ledger, { n: 400, live: 0, seed: 10 + round, payers: 8, byCid: 0.2, renew: 0, maxBlocks: 2 })
        if (archive) await archiveAll(t)
        out.push(statSync(join(t.dir, 'ledger.mdb')).size)
      }
      return out
    }
    const without = await sizes(false)
    const withArchive = await sizes(true)
    // without: every round adds its removed pins and payments (measured, 500 writes a round: 0.42, 0.71, 1.04, 1.32, 1.63 MB)
    expect(without[4] as number).toBeGreaterThan(2 * (without[1] as number))
    // with: the pages freed by the moves are written again (measured: 0.64, 0.68, 0.68, 0.69, 0.69 MB)
    expect(withArchive[4] as number).toBeLessThanOrEqual(1.1 * (withArchive[1] as number))
  })

  it('a move cut short between the archive\'s commit and the ledger\'s reads once, and the next call finishes it', async () => {
    const { t, now, before, payments } = await halfMoved(120, 4, 5)
    expect(payments.length).toBe(112)
    expect(t.ledger.countByStatus(now).removed).toBe(112)
    expect(await archiveAll(t)).toBe(112)
    expect(await exportsOf(t, now)).toEqual(before)
    expect(t.ledger.countByStatus(now).removed).toBe(112)
  })

  it('an export taken before a move is the same whole when the move lands between its chunks', async () => {
    const t = await openTestLedger({ upgrade: true })
    await paidWrites(CLOCK, t.ledger, { n: 150, live: 3, seed: 6, payers: 5, byCid: 0.3, renew: 0.1, maxBlocks: 2 })
    const now = new Date()
    const before = await exportOf(t, {}, now)
    const out: string[] = []
    let n = 0
    for await (const chunk of exportLedger(contractOf(t), parseExportOptions({}), now, 1).chunks) {
      out.push(chunk)
      if (++n === 3) expect(await archiveAll(t)).toBe(135)
    }
    expect(out.join('')).toBe(before)
    expect(await exportOf(t, {}, now)).toBe(before)
  })

  it('keeps a replaced pin while its replacement is unsettled (it still holds the blocks), and moves it once that one is pinned', async () => {
    const t = await openTestLedger({ upgrade: true })
    const old = paidPin('00000001-0000-7000-8000-000000000001', 'bafkreidivzimqfqtoqxkrpge6bjyhlvxqs3rhe73owtmdulaxr5do5in7u')
    await t.ledger.create(old.pin, old.payment, [old.pin.cid])
    const cid = 'bafkreibm6jg3ux5qumhcn2b3flc3tyu6dmlb4xa7u5bf44yegnrjhc4yeq'
    const next = paidPin('00000002-0000-7000-8000-000000000002', cid, { purpose: `replace:${old.pin.requestid}:${cid}:1`, pin: { status: 'queued', source: 'pin', replaces: old.pin.requestid } })
    await t.ledger.create(next.pin, next.payment)
    expect(t.ledger.get(old.pin.requestid)?.removed?.why).toBe('replaced')
    expect(await archiveAll(t)).toBe(0)
    expect(t.ledger.refCount(old.pin.cid)).toBe(1)

    await t.ledger.finishFetch(next.pin.requestid, [next.pin.cid], 10, 'pinned')
    expect(t.ledger.refCount(old.pin.cid)).toBe(0)
    expect(await archiveAll(t)).toBe(1)
    expect(t.ledger.get(old.pin.requestid)).toBeUndefined()
    expect(t.ledger.refCount(next.pin.cid)).toBe(1)
  })

  it('a pass opens the archive for each batch that moves pins and closes it after, and one that only forgets marks does not open it', async () => {
    const t = await openTestLedger({ upgrade: true })
    await paidWrites(CLOCK, t.ledger, { n: 50, live: 0, seed: 14, payers: 2, byCid: 0, renew: 0, maxBlocks: 1 })
    const archive = t.env.archive as unknown as { openDbs: () => unknown, dbs?: unknown }
    let opened = 0
    const openDbs = archive.openDbs.bind(archive)
    archive.openDbs = () => { if (archive.dbs == null) opened++; return openDbs() }
    const openBetween: boolean[] = []
    const between = async (): Promise<void> => { openBetween.push(archive.dbs != null) }
    const yearAgo = new Date(Date.now() - 365 * 86400_000)
    // 50 removals in batches of 20: three batches, each its own opening, closed before the next
    expect(await t.ledger.archiveDue(yearAgo, between, () => false, 20, FUTURE)).toBe(50)
    expect(opened).toBe(3)
    expect(openBetween).toEqual([false, false])
    expect(archive.dbs).toBeUndefined()
    // forgetting the 50 marks moves nothing: the archive stays closed
    expect(await t.ledger.archiveDue(FUTURE, between, () => false, 20)).toBe(0)
    expect(opened).toBe(3)
    expect(entries(t, 'payments-moved', { keyEncoding: 'binary' })).toBe(0)
  })

  it('a pass goes on past removed pins that must stay, however many lead the due range, in transactions of its batch size', async () => {
    const t = await openTestLedger({ upgrade: true })
    const A = 'bafkreidivzimqfqtoqxkrpge6bjyhlvxqs3rhe73owtmdulaxr5do5in7u'
    const B = 'bafkreibm6jg3ux5qumhcn2b3flc3tyu6dmlb4xa7u5bf44yegnrjhc4yeq'
    const id = (n: number): string => `00000010-0000-7000-8000-${String(n).padStart(12, '0')}`
    // 9 replaced pins whose replacements have not settled: removed first, and kept (stillNeeded)
    for (let n = 0; n < 9; n++) {
      const old = paidPin(id(n), A)
      await t.ledger.create(old.pin, old.payment, [A])
      const next = paidPin(id(100 + n), B, { purpose: `replace:${old.pin.requestid}:${B}:1`, pin: { status: 'queued', source: 'pin', replaces: old.pin.requestid } })
      await t.ledger.create(next.pin, next.payment)
    }
    // then 5 plain removals, later
    for (let n = 0; n < 5; n++) {
      const p = paidPin(id(200 + n), A)
      await t.ledger.create(p.pin, p.payment, [A])
      await t.ledger.remove(p.pin.requestid, 'unpinned', new Date(Date.now() + 60_000 + n))
    }
    const transaction = t.env.transaction
    let commits = 0
    t.env.transaction = async (fn) => { commits++; return await transaction(fn) }
    let batches = 0
    try {
      // batches of 2, so 8 index entries scanned per batch: the 9 kept pins fill the first batch's whole scan
      expect(await t.ledger.archiveDue(FUTURE, async () => { batches++ }, () => false, 2)).toBe(5)
    } finally {
      t.env.transaction = transaction
    }
    // the first batch moved nothing (no commit); then 2 + 2 + 1 moves, a ledger transaction each
    expect([batches, commits]).toEqual([3, 3])
    for (let n = 0; n < 9; n++) expect(t.ledger.get(id(n))?.removed?.why).toBe('replaced')
    for (let n = 0; n < 5; n++) expect(t.ledger.get(id(200 + n))).toBeUndefined()
    expect(t.ledger.countByStatus(new Date()).removed).toBe(14)
  })

  it('the upgrade lists the removed pins an older ledger holds, which then move', async () => {
    const t = await openTestLedger({ upgrade: true })
    await paidWrites(CLOCK, t.ledger, { n: 60, live: 2, seed: 8, payers: 3, byCid: 0, renew: 0, maxBlocks: 1 })
    // as a version-3 ledger left it: no index of removed pins
    await t.env.transaction(() => {
      const idx = t.env.db('pins-removed')
      for (const { key } of [...idx.getRange()]) void idx.remove(key)
      t.env.setUpgraded('index:removed-pins', false)
    })
    expect(await archiveAll(t)).toBe(0)
    await t.ledger.upgrade()
    expect(await archiveAll(t)).toBe(54)
    expect(entries(t, 'pins')).toBe(6)
  })

  it('the upgrade writes the index of an older ledger\'s removed pins in transactions of at most 1,000 pins', async () => {
    const t = await openTestLedger({ upgrade: true })
    await paidWrites(CLOCK, t.ledger, { n: 1_100, live: 2, seed: 9, payers: 3, byCid: 0, renew: 0, maxBlocks: 1 })
    const removed = t.ledger.countByStatus(new Date()).removed
    expect(removed).toBeGreaterThan(1_000)
    await t.env.transaction(() => {
      const idx = t.env.db('pins-removed')
      for (const { key } of [...idx.getRange()]) void idx.remove(key)
      t.env.setUpgraded('index:removed-pins', false)
    })
    const transaction = t.env.transaction
    let commits = 0
    t.env.transaction = async (fn) => { commits++; return await transaction(fn) }
    try {
      await t.ledger.upgrade()
    } finally {
      t.env.transaction = transaction
    }
    // 1,100 pins: a batch of 1,000, one of 100, and the mark that the step is done (one transaction on the old code)
    expect(commits).toBe(3)
    expect(entries(t, 'pins-removed')).toBe(removed)
    expect(await archiveAll(t)).toBe(removed)
  })

  it('serve\'s archiver moves every removed pin; the payment of one removed within its delay stays used, by a mark the pass past the delay forgets', async () => {
    const t = await openTestLedger({ upgrade: true })
    const early = paidPin('00000003-0000-7000-8000-000000000003', 'bafkreidivzimqfqtoqxkrpge6bjyhlvxqs3rhe73owtmdulaxr5do5in7u')
    const late = paidPin('00000004-0000-7000-8000-000000000004', 'bafkreibm6jg3ux5qumhcn2b3flc3tyu6dmlb4xa7u5bf44yegnrjhc4yeq')
    const live = paidPin('00000005-0000-7000-8000-000000000005', 'bafkreibm6jg3ux5qumhcn2b3flc3tyu6dmlb4xa7u5bf44yegnrjhc4yeq')
    for (const p of [early, late, live]) await t.ledger.create(p.pin, p.payment, [p.pin.cid])
    const archive = join(t.dir, 'ledger-archive.mdb')
    const quiet = createLogger({ level: 'error', write: () => {} })
    // nothing removed: the archive is not even opened (created)
    const idle = startArchiver(t.ledger, 600_000, 3600_000, quiet)
    expect(await idle.pass()).toBe(0)
    await idle.stop()
    expect(existsSync(archive)).toBe(false)

    await t.ledger.remove(late.pin.requestid, 'unpinned', new Date())
    await t.ledger.remove(early.pin.requestid, 'unpinned', new Date(Date.now() - 3600_000))
    const archiver = startArchiver(t.ledger, 600_000, 3600_000, quiet)
    try {
      expect(await archiver.pass()).toBe(2)
      expect(existsSync(archive)).toBe(true)
      for (const p of [early, late]) {
        expect(t.ledger.get(p.pin.requestid)).toBeUndefined()
        expect(t.ledger.payment(p.payment.id)).toBeUndefined()
        expect(t.ledger.known(p.pin.requestid)).toBe(true)
        expect(t.ledger.knownPayment(p.payment.id)).toBe(true)
      }
      expect(ledgerPayments(t)).toBe(1)
      // removed an hour ago: nothing signed before that is valid any more, no mark; 'late': marked, still used
      expect(t.ledger.paymentUsed(early.payment.id)).toBe(false)
      expect(t.ledger.paymentUsed(late.payment.id)).toBe(true)
      expect(t.ledger.paymentUsed(live.payment.id)).toBe(true)
      expect(entries(t, 'payments-moved', { keyEncoding: 'binary' })).toBe(1)
      expect(entries(t, 'pins-removed')).toBe(1)
      // a used payment is refused however its pin left
      const again = paidPin('00000006-0000-7000-8000-000000000006', late.pin.cid, { id: late.payment.id })
      await expect(t.ledger.create(again.pin, again.payment, [again.pin.cid])).rejects.toThrow(PaymentReusedError)
      await expect(t.ledger.recordPayment({ ...late.payment, requestid: 'x' }, () => {})).rejects.toThrow(PaymentReusedError)
      expect(await archiver.pass()).toBe(0)
      expect(t.ledger.paymentUsed(late.payment.id)).toBe(true)
    } finally {
      await archiver.stop()
    }
    // a pass whose delay the removal has passed forgets the mark and its entry
    const prompt = startArchiver(t.ledger, -60_000, 3600_000, quiet)
    expect(await prompt.pass()).toBe(0)
    await prompt.stop()
    expect(t.ledger.paymentUsed(late.payment.id)).toBe(false)
    expect(entries(t, 'payments-moved', { keyEncoding: 'binary' })).toBe(0)
    expect(entries(t, 'pins-removed')).toBe(0)
    expect(t.ledger.countByStatus(new Date()).removed).toBe(2)
  })

  it('moved with marks, the exports, counts and block references are the same, and each payment still in its validity counts as used', async () => {
    const t = await openTestLedger({ upgrade: true })
    await paidWrites(CLOCK, t.ledger, { n: 300, live: 4, seed: 12, payers: 6, byCid: 0.2, renew: 0.1, maxBlocks: 3 })
    const now = new Date()
    const before = await exportsOf(t, now)
    const counts = t.ledger.countByStatus(now)
    const refs = [...t.ledger.referencedBlocks()].sort()
    const removed = [...t.ledger.all()].filter(p => p.removed != null)
    const used = [...t.ledger.allPayments()].map(p => p.id)
    expect(removed.length).toBe(300 - 24)
    // every removal is after the payment cutoff (a year ago) and before now: all move, marked
    expect(await t.ledger.archiveDue(new Date(Date.now() - 365 * 86400_000), undefined, undefined, undefined, FUTURE)).toBe(276)
    expect(entries(t, 'pins')).toBe(24)
    expect(entries(t, 'payments-moved', { keyEncoding: 'binary' })).toBe(276)
    expect(await exportsOf(t, now)).toEqual(before)
    expect(t.ledger.countByStatus(now)).toEqual(counts)
    expect([...t.ledger.referencedBlocks()].sort()).toEqual(refs)
    for (const id of used) expect(t.ledger.paymentUsed(id)).toBe(true)
    // a second pass has nothing to move; one past the cutoff forgets every mark and nothing else
    expect(await t.ledger.archiveDue(new Date(Date.now() - 365 * 86400_000), undefined, undefined, undefined, FUTURE)).toBe(0)
    expect(await archiveAll(t)).toBe(0)
    expect(entries(t, 'payments-moved', { keyEncoding: 'binary' })).toBe(0)
    expect(entries(t, 'pins-removed')).toBe(0)
    expect(await exportsOf(t, now)).toEqual(before)
    expect(t.ledger.countByStatus(now)).toEqual(counts)
    for (const p of removed) expect(t.ledger.paymentUsed(p.payment.id)).toBe(false)
  })

  it('a marked move cut short between the archive\'s commit and the ledger\'s reads once, and the next pass finishes it with its marks', async () => {
    const { t, now, before, payments } = await halfMoved(60, 3, 13)
    expect(payments.length).toBe(54)
    const yearAgo = new Date(Date.now() - 365 * 86400_000)
    expect(await t.ledger.archiveDue(yearAgo, undefined, undefined, undefined, FUTURE)).toBe(54)
    expect(await exportsOf(t, now)).toEqual(before)
    expect(t.ledger.countByStatus(now).removed).toBe(54)
    for (const p of payments) expect(t.ledger.paymentUsed(p.id)).toBe(true)
  })

  it('keeps the ledger a fraction of its size when removals move at once with marks, against moving them after the payment timeout', async () => {
    // the window a payment may still be valid: the removals in it are whole in the ledger, or marks
    const sizeWith = async (marked: boolean): Promise<number> => {
      const t = await openTestLedger({ upgrade: true })
      for (let round = 0; round < 4; round++) {
        await paidWrites(CLOCK, t.ledger, { n: 500, live: 0, seed: 20 + round, payers: 8, byCid: 0.2, renew: 0, maxBlocks: 2 })
        if (marked) await t.ledger.archiveDue(new Date(Date.now() - 365 * 86400_000), undefined, undefined, undefined, FUTURE)
      }
      const stat = t.env.db('pins').getStats() as { pageSize: number }
      const used = ['pins', 'payments', 'pins-removed', 'pin-blocks'].reduce((n, db) => n + pagesOf(t, db), 0) + pagesOf(t, 'payments-binary', 'binary') + pagesOf(t, 'payments-moved', 'binary')
      return used * stat.pageSize
    }
    const whole = await sizeWith(false)
    const marks = await sizeWith(true)
    // measured (2,000 removals): 1.20 MB whole (~600 bytes each), 0.45 MB as marks (~225 bytes: the mark in
    // payments-moved, ~64 bytes and random keys, and the removal's index entry holding it, ~112)
    expect(marks).toBeLessThan(0.45 * whole)
  })
})
