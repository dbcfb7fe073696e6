/**
 * Admin commands on a stopped data dir run on the core serve runs on
 * (src/app/core.ts openCore, issue 16): they upgrade an older ledger's indexes
 * as serve does before anything reads them, and only `pind keys` opens the
 * signing keys (a keystore opened creates a key when there is none: no
 * other command may leave one behind).
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { openLedgerEnv } from '../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../src/ledger/lmdb/pins.js'
import { runPind, tempDir } from '../helpers/pind.js'
import { pinRecord } from '../helpers/records.js'

const A = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const B = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
const PROVIDE_DBS = ['provide-roots', 'provide-blocks', 'provide-roots-due', 'provide-blocks-due']

const run = async (dataDir: string, ...args: string[]): ReturnType<typeof runPind> =>
  await runPind([...args, '--data-dir', dataDir], { env: { PIND_CONFIG: undefined, PIND_SETTLER_KEY: undefined } })

/** A data dir whose ledger holds one pin, as a pind from before the provide schedule left it (the index not built). */
async function olderDataDir (): Promise<string> {
  const dataDir = tempDir('pind-offline-')
  const env = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
  try {
    const ledger = new PinLedger(env)
    await ledger.upgrade()
    await ledger.create(pinRecord('1', A), undefined, [A, B])
    await env.transaction(() => {
      for (const name of PROVIDE_DBS) env.db(name, { keyEncoding: 'binary' }).clearSync()
      env.setUpgraded('index:provide-keys', false)
    })
  } finally {
    await env.close()
  }
  return dataDir
}

/** the provide schedule of the data dir's ledger, read without upgrading it */
async function schedule (dataDir: string): Promise<{ upgraded: boolean, roots: number, blocks: number }> {
  const env = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
  try {
    const ledger = new PinLedger(env)
    return { upgraded: env.upgraded('index:provide-keys'), roots: ledger.provides.count('roots'), blocks: ledger.provides.count('blocks') }
  } finally {
    await env.close()
  }
}

describe('admin commands on a stopped data dir', () => {
  it('upgrade an older ledger\'s indexes, as serve does', async () => {
    const dataDir = await olderDataDir()
    expect(await schedule(dataDir)).toEqual({ upgraded: false, roots: 0, blocks: 0 })
    const r = await run(dataDir, 'pins', 'ls', '--json')
    expect(r.code, r.err).toBe(0)
    expect(r.err).toMatch(/no serve running/)
    expect(JSON.parse(r.out).count).toBe(1)
    expect(await schedule(dataDir)).toEqual({ upgraded: true, roots: 1, blocks: 2 })
  })

  it('leave the signing keys alone: only pind keys opens (and so creates) them', async () => {
    const dataDir = await olderDataDir()
    const keys = join(dataDir, 'keys')
    for (const args of [['pins', 'ls'], ['status'], ['gc', '--dry-run'], ['settlements', 'list'], ['deny', 'ls']]) {
      const r = await run(dataDir, ...args)
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(0)
      expect(existsSync(keys), `pind ${args.join(' ')} created ${keys}`).toBe(false)
    }
    const listed = await run(dataDir, 'keys', 'list', '--json')
    expect(listed.code, listed.err).toBe(0)
    expect(existsSync(keys)).toBe(true)
  })
})
