/**
 * Issue 13, finding 1, as a property over many random sequences: a real
 * LMDB ledger, a real blockstore folder, the real serve policy (what the
 * gateway and bitswap ask) and the real gc. Pins are uploaded, pinned by CID,
 * replaced (also while their predecessor is still queued), fetched, failed,
 * deleted and expired in random order; after every step the serve policy
 * must allow exactly the content a model of the pins says is held, and after
 * every gc exactly that content is left on disk.
 * The e2e twin (test/e2e/hostile-replace-chain.test.ts) runs a short
 * sequence against the real server; this one runs long ones in-process.
 * A failure prints its seed: PIND_TEST_SEED=<seed> reruns just that one.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { FsBlockstore } from 'blockstore-fs'
import { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { CommitLock } from '../../../src/ipfs/commit-lock.js'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { openLmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import { runGc, sweepExpired } from '../../../src/service/background/gc.js'
import { ServePolicy } from '../../../src/service/serving/serve-policy.js'
import { prng } from '../../helpers/bad-input/cases.js'
import { heldContent, type ModelPin } from '../../helpers/hold-model.js'
import { tempDir } from '../../helpers/pind.js'
import { pinRecord } from '../../helpers/records.js'

interface Content { cid: string, bytes?: Uint8Array }

async function run (seed: number, steps: number): Promise<void> {
  const rng = prng(seed)
  const dir = tempDir('pind-hold-')
  const store = await openLmdbLedger(join(dir, 'ledger.mdb'), { graceMs: () => 0 })
  const ledger = store.pins
  const blocksDir = join(dir, 'blocks')
  const bs = new FsBlockstore(blocksDir)
  await bs.open()
  const policy = new ServePolicy({ pins: store.servedBlocks(), scope: 'pinned' })
  const lock = new CommitLock()
  const pins: Array<ModelPin<Content>> = []
  const contents: Content[] = []
  const log: string[] = []
  let n = 0

  const newContent = (): Content => {
    const bytes = randomBytes(16 + rng.int(64))
    const c = { cid: rawCid(bytes).toString(), bytes }
    contents.push(c)
    return c
  }
  const ghost = (): Content => {
    const c = { cid: rawCid(randomBytes(8)).toString() }
    contents.push(c)
    return c
  }
  const target = (): Content => {
    const roll = rng.int(10)
    const known = contents.filter(c => c.bytes != null)
    if (roll < 3 && known.length > 0) return rng.pick(known)
    return roll < 7 ? newContent() : ghost()
  }
  const queued = async (c: Content, replaces?: ModelPin<Content>): Promise<ModelPin<Content>> => {
    const id = `p${++n}`
    await ledger.create(pinRecord(id, c.cid, { status: 'queued', ...(replaces != null ? { replaces: replaces.id } : {}) }))
    const p: ModelPin<Content> = { id, content: c, state: 'pending', ...(replaces != null ? { replaces: { pin: replaces, stateThen: replaces.state } } : {}) }
    if (replaces != null) replaces.state = 'removed'
    pins.push(p)
    return p
  }

  try {
    for (let step = 0; step < steps; step++) {
      const live = pins.filter(p => p.state !== 'removed')
      const fetchable = live.filter(p => p.state === 'pending' && p.content.bytes != null)
      const pending = live.filter(p => p.state === 'pending')
      const op = live.length === 0
        ? 'upload'
        : rng.pick(['upload', 'pin', 'replace', 'replace', 'replace', 'fetch', 'fetch', 'fail', 'delete', 'expire', 'gc'] as const)
      if (op === 'upload') {
        const c = newContent()
        await bs.put(CID.parse(c.cid), c.bytes as Uint8Array)
        const id = `p${++n}`
        await ledger.create(pinRecord(id, c.cid, { source: 'upload' }), undefined, [c.cid])
        pins.push({ id, content: c, state: 'pinned' })
        log.push(`upload ${id}`)
      } else if (op === 'pin') {
        const p = await queued(target())
        log.push(`pin ${p.id}${p.content.bytes == null ? ' (ghost)' : ''}`)
      } else if (op === 'replace') {
        const old = rng.pick(live)
        const p = await queued(rng.int(6) === 0 ? old.content : target(), old)
        log.push(`replace ${old.id} (${p.replaces?.stateThen ?? ''}) with ${p.id}${p.content.bytes == null ? ' (ghost)' : ''}`)
      } else if (op === 'fetch' && fetchable.length > 0) {
        const p = rng.pick(fetchable)
        await bs.put(CID.parse(p.content.cid), p.content.bytes as Uint8Array)
        await ledger.finishFetch(p.id, [p.content.cid], 1, 'pinned')
        p.state = 'pinned'
        log.push(`fetched ${p.id}`)
      } else if (op === 'fail' && pending.length > 0) {
        const p = rng.pick(pending)
        await ledger.failFetch(p.id, 'failed')
        p.state = 'failed'
        log.push(`failed ${p.id}`)
      } else if (op === 'delete') {
        const p = rng.pick(live)
        await ledger.remove(p.id, 'unpinned')
        p.state = 'removed'
        log.push(`delete ${p.id}`)
      } else if (op === 'expire') {
        const p = rng.pick(live)
        await ledger.renew(p.id, 0, undefined, () => new Date(Date.now() - 1000))
        await sweepExpired(ledger, new Date())
        p.state = 'removed'
        log.push(`expire ${p.id}`)
      } else if (op === 'gc') {
        await runGc({ pins: ledger, blocks: new FsBackend(blocksDir), lock, graceMs: 0 })
        log.push('gc')
      }
      const want = heldContent(pins)
      for (const c of contents) {
        expect(policy.mayServe(CID.parse(c.cid), 'gateway'), `served: ${c.cid}`).toBe(want.has(c.cid))
        expect(policy.mayServe(CID.parse(c.cid), 'bitswap'), `over bitswap: ${c.cid}`).toBe(want.has(c.cid))
        if (op === 'gc' && c.bytes != null) expect(await bs.has(CID.parse(c.cid)), `on disk after gc: ${c.cid}`).toBe(want.has(c.cid))
      }
    }
  } catch (err) {
    const e = err as Error
    e.message = `seed ${seed} (rerun: PIND_TEST_SEED=${seed}); steps:\n  ${log.join('\n  ')}\n${e.message}`
    throw e
  } finally {
    await bs.close()
    await store.close()
  }
}

describe('what pins hold, over random sequences of pin, replace, fetch, fail, delete, expire and gc', () => {
  it('the serve policy and gc agree with the pins after every step', async () => {
    const fixed = process.env.PIND_TEST_SEED
    const seeds = fixed != null ? [Number(fixed)] : Array.from({ length: 3 }, () => Math.floor(Math.random() * 2 ** 31))
    for (const seed of seeds) await run(seed, Number(process.env.PIND_TEST_STEPS ?? 100))
  })
})
