/**
 * Two front ends ('a' and 'b': a PinFetcher each, each on its own pool of
 * one PostgreSQL ledger, its own blockstore and staging) fetching pins by
 * CID from one stand-in peer that serves raw blocks: each pin is fetched
 * by one of them, and a pin whose claimant can no longer reach the ledger
 * is fetched by the other once the claim's lease lapses, while the first,
 * reaching the ledger again, stops its fetch.
 */
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { MemoryDatastore } from 'datastore-core'
import type { CID } from 'multiformats/cid'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { PIN_CODECS } from '../../../src/ipfs/codecs.js'
import { CommitLock } from '../../../src/ipfs/commit-lock.js'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { BlockStaging } from '../../../src/ipfs/staging.js'
import { silentLogger } from '../../../src/kernel/log.js'
import type { PinLedger } from '../../../src/ledger/pins.js'
import { openPostgresLedger, type PostgresLedger } from '../../../src/ledger/postgres/ledger.js'
import { newRequestid } from '../../../src/ledger/requestid.js'
import { PinFetcher, type PinFetcherOptions } from '../../../src/service/pins/pin-fetcher.js'
import { tempDir } from '../../helpers/pind.js'
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js'
import { paidPin } from '../../helpers/records.js'

/** short, so a lapse is seen within a test: renewed every 400 ms, lapsed claims looked for every 600 ms */
const LEASE_MS = 1200

let server: TestPostgres
const dirs: string[] = []
beforeAll(async () => { server = await startTestPostgres() })
afterAll(async () => {
  await server?.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** the stand-in peer's blocks, by CID */
const served = new Map<string, Uint8Array>()
function block (): CID {
  const bytes = randomBytes(2000)
  const cid = rawCid(bytes)
  served.set(cid.toString(), bytes)
  return cid
}

interface FrontEnd {
  fetcher: PinFetcher
  backend: FsBackend
  /** CIDs this front end asked the peer for, in order */
  retrieved: string[]
  /** CIDs whose retrieval was aborted */
  aborted: string[]
}

/**
 * A front end on `ledger` claiming as `holder`. Blocks arrive after 50 ms
 * (a peer on a network); a CID in `hang` is never answered, only aborted.
 */
async function frontEnd (holder: string, ledger: PinFetcherOptions['ledger'], hang = new Set<string>()): Promise<FrontEnd> {
  const dir = tempDir(`pind-claims-${holder}-`)
  dirs.push(dir)
  const backend = new FsBackend(join(dir, 'blocks'))
  await backend.open()
  const retrieved: string[] = []
  const aborted: string[] = []
  const fetcher = new PinFetcher({
    ledger,
    holder,
    leaseMs: LEASE_MS,
    staging: new BlockStaging(backend, join(dir, 'staging')),
    lock: new CommitLock(),
    node: {
      blockstore: backend.blockstore,
      getCodec: async (code: number) => {
        const c = PIN_CODECS.find(c => c.code === code)
        if (c == null) throw new Error(`no codec ${code}`)
        return c
      }
    } as unknown as PinFetcherOptions['node'],
    network: {
      dial: async () => ({ connected: 1, failed: [] }),
      retrieve: async (cid: CID, signal: AbortSignal) => {
        retrieved.push(cid.toString())
        return await new Promise<Uint8Array>((resolve, reject) => {
          signal.addEventListener('abort', () => {
            aborted.push(cid.toString())
            reject(signal.reason)
          }, { once: true })
          if (hang.has(cid.toString())) return
          setTimeout(() => {
            const bytes = served.get(cid.toString())
            if (bytes == null) reject(new Error(`no block ${cid.toString()}`))
            else resolve(bytes)
          }, 50)
        })
      },
      announce: async () => {}
    },
    log: silentLogger,
    concurrency: 3,
    blockConcurrency: 4,
    stallMs: 60_000,
    retryWindowMs: 3600_000
  })
  await fetcher.start()
  return { fetcher, backend, retrieved, aborted }
}

async function queue (pins: PinLedger, root: CID): Promise<string> {
  const p = paidPin(newRequestid(), root.toString(), {
    pin: { status: 'queued', source: 'pin', pinnedUntil: new Date(Date.now() + 86400_000).toISOString(), fetch: { attempts: 0, giveUpAt: new Date(Date.now() + 3600_000).toISOString() } }
  })
  await pins.create(p.pin, p.payment)
  return p.pin.requestid
}

describe('PinFetcher: front ends sharing a PostgreSQL ledger', () => {
  let a: PostgresLedger
  let b: PostgresLedger
  let drop: () => Promise<void>
  const open = async (url: string): Promise<PostgresLedger> => await openPostgresLedger({ connectionString: url, graceMs: () => 0, datastore: new MemoryDatastore() })

  beforeAll(async () => {
    const db = await server.freshDatabase()
    drop = db.drop
    a = await open(db.url)
    b = await open(db.url)
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
    await drop?.()
  })

  it('each pin is fetched by one of two front ends', async () => {
    const [fa, fb] = [await frontEnd('a', a.pins), await frontEnd('b', b.pins)]
    try {
      const roots = Array.from({ length: 12 }, () => block())
      // queued through both: each front end hears of pins it queued and of the other's
      const ids: string[] = []
      for (const [i, root] of roots.entries()) ids.push(await queue(i % 2 === 0 ? a.pins : b.pins, root))
      await vi.waitFor(async () => {
        for (const id of ids) expect((await a.pins.get(id))?.status).toBe('pinned')
      }, { timeout: 20_000, interval: 100 })
      const asked = [...fa.retrieved, ...fb.retrieved]
      // every root asked for once, by one front end, and committed to that one's blockstore
      expect(asked.sort()).toEqual(roots.map(r => r.toString()).sort())
      for (const root of roots) {
        const by = fa.retrieved.includes(root.toString()) ? fa : fb
        expect(await by.backend.blockstore.has(root)).toBe(true)
      }
      expect(await a.pins.pendingFetches()).toEqual([])
    } finally {
      await fa.fetcher.stop()
      await fb.fetcher.stop()
    }
  })

  it('a pin claimed by a front end that stops renewing is fetched by the other after the lease; the first stops its fetch once it learns', async () => {
    const root = block()
    // 'a' cannot reach the ledger to claim or renew while `cut` is set; its fetch of `root` never ends by itself
    let cut = false
    const unreachable = async (): Promise<never> => { throw new Error('ledger unreachable') }
    const aLedger: PinFetcherOptions['ledger'] = {
      ...a.pins,
      claimFetches: async (...args) => cut ? await unreachable() : await a.pins.claimFetches(...args),
      renewFetches: async (...args) => cut ? await unreachable() : await a.pins.renewFetches(...args)
    }
    const fa = await frontEnd('a', aLedger, new Set([root.toString()]))
    let fb: FrontEnd | undefined
    try {
      const id = await queue(a.pins, root)
      await vi.waitFor(() => { expect(fa.retrieved).toContain(root.toString()) }, { timeout: 10_000, interval: 20 })
      cut = true
      const cutAt = Date.now()
      fb = await frontEnd('b', b.pins)
      await vi.waitFor(async () => { expect((await b.pins.get(id))?.status).toBe('pinned') }, { timeout: 10_000, interval: 50 })
      const pinnedAt = Date.now()
      // 'b' waited for the lease 'a' took before the cut (renewed at most once since), then fetched it itself
      expect(fb.retrieved).toEqual([root.toString()])
      expect(pinnedAt - cutAt).toBeGreaterThanOrEqual(LEASE_MS - 450)
      expect(await fb.backend.blockstore.has(root)).toBe(true)
      // 'a' was still fetching all along
      expect(fa.aborted).toEqual([])
      cut = false
      await vi.waitFor(() => { expect(fa.aborted).toEqual([root.toString()]) }, { timeout: 5_000, interval: 20 })
      expect(await fa.backend.blockstore.has(root)).toBe(false)
      expect((await a.pins.get(id))?.status).toBe('pinned')
    } finally {
      await fa.fetcher.stop()
      await fb?.fetcher.stop()
    }
  })
})
