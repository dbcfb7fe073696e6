/**
 * serve's gc schedule on a real blockstore folder and a real LMDB ledger: a
 * release past the watermark starts a run at once, and stop() ends a run under
 * way after the delete batch it is in (it does not sweep the rest first).
 */
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { CommitLock } from '../../../src/ipfs/commit-lock.js'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { openLmdbLedger, type LmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import type { PinLedger } from '../../../src/ledger/pins.js'
import { silentLogger } from '../../../src/kernel/log.js'
import { GcSchedule, type GcRunReport } from '../../../src/service/background/gc-schedule.js'
import { Maintenance } from '../../../src/service/background/maintenance.js'
import { tempDir } from '../../helpers/pind.js'
import { pinRecord } from '../../helpers/records.js'

let dir: string
let ledger: LmdbLedger
let pins: PinLedger
let fs: FsBackend

beforeEach(async () => {
  dir = tempDir('pind-gc-schedule-')
  ledger = await openLmdbLedger(join(dir, 'ledger.mdb'), { graceMs: () => 0 })
  pins = ledger.pins
  fs = new FsBackend(join(dir, 'blocks'))
  await fs.open()
})
afterEach(async () => {
  await fs.close()
  await ledger.close()
  rmSync(dir, { recursive: true, force: true })
})

async function garbage (n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const b = randomBytes(16)
    await fs.blockstore.put(rawCid(b), b)
  }
}

describe('GcSchedule', () => {
  it('runs when released bytes pass the watermark, not before; a pin\'s own blocks stay', async () => {
    const keep = randomBytes(100)
    await fs.blockstore.put(rawCid(keep), keep)
    await pins.create(pinRecord('live', rawCid(keep).toString(), { source: 'upload' }), undefined, [rawCid(keep).toString()])
    await garbage(3)
    const runs: GcRunReport[] = []
    const schedule = new GcSchedule({ pins, blocks: fs, lock: new CommitLock(), graceMs: 0 }, { intervalMs: 0, watermarkBytes: 1000, log: silentLogger, committed: async () => { await pins.committed() }, onRun: (r) => { runs.push(r) } })
    try {
      schedule.released(999)
      expect(runs).toEqual([])
      expect((await fs.usage()).blocks).toBe(4)
      schedule.released(1)
      const r = await schedule.run('watermark') // joins the run the release started
      expect(r).toMatchObject({ removedBlocks: 3, keptBlocks: 1 })
      expect(runs).toMatchObject([{ trigger: 'watermark', outcome: 'done', removedBlocks: 3, freedBytes: 48 }])
      expect(schedule.unreferencedBytes).toBe(0)
      expect((await fs.usage()).blocks).toBe(1)
    } finally {
      await schedule.stop()
    }
  })

  it('stop() ends a run after the delete batch under way, and an admin task started meanwhile waits for the run', async () => {
    await garbage(1100)
    const lock = new CommitLock()
    // a commit in progress: the first delete batch (1,000 blocks) waits for it
    let commitDone = (): void => {}
    const commit = lock.shared(async () => { await new Promise<void>(resolve => { commitDone = resolve }) })
    let asked = (): void => {}
    const batchAsked = new Promise<void>(resolve => { asked = resolve })
    const runs: GcRunReport[] = []
    const maintenance = new Maintenance()
    const schedule = new GcSchedule({ pins, blocks: fs, lock: { exclusive: async (fn) => { asked(); return await lock.exclusive(fn) } }, graceMs: 0 },
      { intervalMs: 0, watermarkBytes: 1, log: silentLogger, maintenance, onRun: (r) => { runs.push(r) } })
    schedule.released(1)
    await batchAsked
    expect(maintenance.busy).toBe(true)
    const admin = maintenance.run('gc', async () => 'admin ran')
    const stopped = schedule.stop()
    commitDone()
    await commit
    await stopped
    expect(runs).toMatchObject([{ trigger: 'watermark', outcome: 'stopped', removedBlocks: 1000 }])
    expect((await fs.usage()).blocks).toBe(100)
    expect(await admin).toBe('admin ran')
  })

  it('past the watermark while another maintenance task runs, it skips once and tries again later, without starving the event loop (soak hang, issue 34)', async () => {
    await garbage(2)
    const runs: GcRunReport[] = []
    const maintenance = new Maintenance()
    const schedule = new GcSchedule({ pins, blocks: fs, lock: new CommitLock(), graceMs: 0 },
      { intervalMs: 0, watermarkBytes: 1, log: silentLogger, maintenance, skippedRetryMs: 200, onRun: (r) => { runs.push(r) } })
    let finishAdmin = (): void => {}
    const admin = maintenance.run('gc', async () => { await new Promise<void>(resolve => { finishAdmin = resolve }) })
    try {
      // a loop turn already 30 ms long: the timers' clock (cached per turn) is behind performance.now()
      const turn = performance.now()
      while (performance.now() - turn < 30) { /* busy */ }
      schedule.released(10)
      // before the fix, each skip ended in a check that started the next skip: an endless chain of
      // microtasks, and a timer (like the admin task's end) never ran again
      await new Promise(resolve => setTimeout(resolve, 50))
      expect(runs.map(r => r.outcome)).toEqual(['skipped'])
      finishAdmin()
      await admin
      // the watermark looks again after skippedRetryMs and runs
      const deadline = performance.now() + 10_000
      while (!runs.some(r => r.outcome === 'done') && performance.now() < deadline) await new Promise(resolve => setTimeout(resolve, 20))
      expect(runs.map(r => r.outcome)).toEqual(['skipped', 'done'])
      expect((await fs.usage()).blocks).toBe(0)
    } finally {
      finishAdmin()
      await schedule.stop()
    }
  })
})
