/**
 * FrontEndBeat (src/service/background/front-end-beat.ts) on a real LMDB
 * ledger: a serve registers and leaves; one that cannot work beside the front
 * ends already beating is refused before it registers, with the fix named.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { FrontEndRecord } from '../../../src/ledger/coordination.js'
import type { LmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import { silentLogger } from '../../../src/kernel/log.js'
import { FrontEndBeat, FrontEndConflictError } from '../../../src/service/background/front-end-beat.js'
import { closeTestLedgers, contractOf, openTestLedger } from '../../helpers/ledger.js'

let ledger: LmdbLedger
const beats: FrontEndBeat[] = []

beforeEach(async () => {
  ledger = contractOf(await openTestLedger({ prefix: 'pind-beat-' }))
})
afterEach(async () => {
  for (const b of beats.splice(0)) await b.stop()
  await closeTestLedgers()
})

const BUCKET = 'blocks in S3 bucket pind, prefix blocks/ at http://127.0.0.1:7480'
const SETTLER = '0x' + 'c4'.repeat(20)

function beat (id: string, self: Partial<FrontEndRecord> = {}, sharedBlocks = true): FrontEndBeat {
  const b = new FrontEndBeat({
    frontEnds: ledger.frontEnds,
    self: { id, url: `http://127.0.0.1/${id}`, version: '0.1.0', blockstore: BUCKET, startedAt: new Date().toISOString(), ...self },
    sharedBlocks,
    intervalMs: 60_000,
    log: silentLogger
  })
  beats.push(b)
  return b
}

describe('FrontEndBeat', () => {
  it('registers this serve, lets a second on the same bucket with its own settler join, and is marked stopped at the stop: then its settler key is free for another', async () => {
    const a = beat('peer-a', { settler: SETTLER })
    await a.start()
    await beat('peer-b', { settler: '0x' + 'd5'.repeat(20) }).start()
    expect((await ledger.frontEnds.list()).map(f => f.id).sort()).toEqual(['peer-a', 'peer-b'])
    await a.stop()
    const listed = await ledger.frontEnds.list()
    expect(listed.find(f => f.id === 'peer-a')?.leftAt).toBeDefined()
    expect(listed.find(f => f.id === 'peer-b')?.leftAt).toBeUndefined()
    await beat('peer-c', { settler: SETTLER }).start()
    // a beat after the stop (a restart) clears the mark
    await beat('peer-a', { settler: '0x' + 'e6'.repeat(20) }).start()
    expect((await ledger.frontEnds.list()).find(f => f.id === 'peer-a')?.leftAt).toBeUndefined()
  })

  it('its own record from an earlier run is no conflict', async () => {
    await ledger.frontEnds.beat({ id: 'peer-a', url: 'http://old', version: '0.0.9', blockstore: 'blocks on disk in /old', startedAt: new Date().toISOString() })
    await beat('peer-a', {}, false).start()
    expect((await ledger.frontEnds.list())[0]?.url).toBe('http://127.0.0.1/peer-a')
  })

  it('refuses a second front end with blocks on its own disk, in another bucket, or with the same settler key, and writes nothing for it', async () => {
    await beat('peer-a', { settler: SETTLER }).start()
    const refusals: Array<[FrontEndBeat, RegExp]> = [
      [beat('peer-fs', { blockstore: 'blocks on disk in /srv/pind/blocks' }, false), /need shared blocks; start every one with --blockstore s3/],
      [beat('peer-other', { blockstore: 'blocks in S3 bucket elsewhere' }), /with its blocks elsewhere \(blocks in S3 bucket pind/],
      [beat('peer-same-key', { settler: SETTLER.toUpperCase().replace('0X', '0x') }), /same settler key .*a settler key of its own/]
    ]
    for (const [b, message] of refusals) {
      const err = await b.start().then(() => undefined, (e: unknown) => e)
      expect(err).toBeInstanceOf(FrontEndConflictError)
      expect((err as Error).message).toMatch(message)
    }
    expect((await ledger.frontEnds.list()).map(f => f.id)).toEqual(['peer-a'])
  })
})
