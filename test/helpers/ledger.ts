/**
 * A ledger on real LMDB in a temp dir for each test that writes one: open it
 * in beforeEach, close it (and remove its dir) in afterEach with
 * closeTestLedgers.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openLedgerEnv, type LedgerEnv } from '../../src/ledger/open.js'
import { PinLedger } from '../../src/ledger/pins.js'
import { tempDir } from './pind.js'

export interface TestLedger { dir: string, env: LedgerEnv, ledger: PinLedger }

let opened: TestLedger[] = []

/** a fresh ledger; `upgrade`: with its indexes built, as serve leaves it */
export async function openTestLedger (opts: { prefix?: string, upgrade?: boolean } = {}): Promise<TestLedger> {
  const dir = tempDir(opts.prefix ?? 'pind-ledger-')
  const env = await openLedgerEnv(join(dir, 'ledger.mdb'))
  const ledger = new PinLedger(env)
  if (opts.upgrade === true) await ledger.upgrade()
  const t = { dir, env, ledger }
  opened.push(t)
  return t
}

/** closes every ledger openTestLedger opened and removes its dir */
export async function closeTestLedgers (): Promise<void> {
  const all = opened
  opened = []
  for (const t of all) {
    await t.env.close()
    rmSync(t.dir, { recursive: true, force: true })
  }
}
