/**
 * A ledger write is all or none (LedgerEnv.transaction): what a transaction
 * wrote before it threw is rolled back, while transactions lmdb commits in
 * the same batch beside it keep theirs. lmdb's own `transaction` commits the
 * writes before a throw; these fail on it.
 */
import { describe, expect, it } from 'vitest'
import { openTestLedger } from '../../helpers/ledger.js'
import { paidPin } from '../../helpers/records.js'

const CID_A = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const CID_B = 'bafkreidvbhs33ighmljlvr7zbv2ywwzcmp5adtf4kqvlly67cy56bdtmve'

describe('a ledger transaction', () => {
  it('that throws leaves nothing it wrote; one beside it in the same commit keeps its writes', async () => {
    const { env } = await openTestLedger()
    const db = env.db<number>('scratch')
    const failed = env.transaction(() => { db.put('a', 1); db.put('b', 2); throw new Error('halfway') })
    const beside = env.transaction(() => { db.put('c', 3); return 'done' })
    await expect(failed).rejects.toThrow('halfway')
    expect(await beside).toBe('done')
    expect([...db.getKeys()]).toEqual(['c'])
  })

  it('an import batch refused for a reused payment writes none of its records, not even those before the reused one', async () => {
    const { ledger } = await openTestLedger({ upgrade: true })
    const first = paidPin('first', CID_A)
    await ledger.create(first.pin, first.payment, [CID_A])
    const fresh = paidPin('fresh', CID_B)
    // the fresh payment is put, then the reused one throws
    await expect(ledger.importBatch([{ pin: fresh.pin, blocks: [CID_B] }], [fresh.payment, first.payment])).rejects.toThrow(/first|used|reused/i)
    expect(ledger.payment(fresh.payment.id)).toBeUndefined()
    expect(ledger.get('fresh')).toBeUndefined()
    expect(ledger.isPinnedBlock(CID_B)).toBe(false)
    // and the batch goes in whole once it is right
    await ledger.importBatch([{ pin: fresh.pin, blocks: [CID_B] }], [fresh.payment])
    expect(ledger.payment(fresh.payment.id)).toEqual(fresh.payment)
    expect(ledger.isPinnedBlock(CID_B)).toBe(true)
  })
})
