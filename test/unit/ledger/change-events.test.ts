/**
 * The ledger's change events that serve's fetcher follows (instead of being
 * told by every caller): a pin queued wakes it, a pin removed or taken down
 * stops its fetch. Each is told once the write has committed, so what it
 * reads then is the ledger with the change in it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { PinLedger } from '../../../src/ledger/lmdb/pins.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'
import { pinRecord } from '../../helpers/records.js'

const A = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const B = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'

let ledger: PinLedger

beforeEach(async () => { ({ ledger } = await openTestLedger()) })
afterEach(closeTestLedgers)

describe('the ledger\'s change events', () => {
  it('tells who watches the queue once a queued pin is committed, not for a pin stored already', async () => {
    const seen: string[][] = []
    const unwatch = ledger.watchQueued(() => { seen.push(ledger.pendingFetches()) })
    await ledger.create(pinRecord('up', A, { status: 'pinned' }), undefined, [A])
    expect(seen).toEqual([])
    await ledger.create(pinRecord('q', B, { status: 'queued' }))
    expect(seen).toEqual([['q']])
    unwatch()
    await ledger.create(pinRecord('q2', A, { status: 'queued' }))
    expect(seen).toHaveLength(1)
  })

  it('tells who watches removals the requestid of a pin removed or taken down, once, after the write', async () => {
    const seen: Array<[string, boolean]> = []
    const unwatch = ledger.watchRemoved((id) => { seen.push([id, ledger.pendingFetches().includes(id)]) })
    await ledger.create(pinRecord('a', A, { status: 'queued' }))
    await ledger.create(pinRecord('b', B, { status: 'queued' }))
    await ledger.remove('a', 'unpinned')
    await ledger.remove('a', 'unpinned') // removed already: nothing changes, nobody is told
    await ledger.takeDown('b', 'court order')
    await ledger.takeDown('b', 'again')
    expect(seen).toEqual([['a', false], ['b', false]])
    unwatch()
    await ledger.create(pinRecord('c', A, { status: 'queued' }))
    await ledger.remove('c', 'unpinned')
    expect(seen).toHaveLength(2)
  })
})
