/**
 * A ledger on real LMDB in a temp dir for each test that writes one: open it
 * in beforeEach, close it (and remove its dir) in afterEach with
 * closeTestLedgers. Also: a ledger rewritten as an earlier layout wrote it,
 * for the upgrades.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Database } from 'lmdb'
import { LmdbLedger } from '../../src/ledger/lmdb/ledger.js'
import { openLedgerEnv, type LedgerEnv } from '../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../src/ledger/lmdb/pins.js'
import { paymentKey } from '../../src/ledger/lmdb/stored.js'
import { UploadTickets } from '../../src/ledger/lmdb/tickets.js'
import { tempDir } from './pind.js'

export interface TestLedger { dir: string, env: LedgerEnv, ledger: PinLedger, tickets: UploadTickets }

let opened: TestLedger[] = []

/** a fresh ledger; `upgrade`: with its indexes built, as serve leaves it */
export async function openTestLedger (opts: { prefix?: string, upgrade?: boolean } = {}): Promise<TestLedger> {
  const dir = tempDir(opts.prefix ?? 'pind-ledger-')
  const env = await openLedgerEnv(join(dir, 'ledger.mdb'))
  const ledger = new PinLedger(env)
  if (opts.upgrade === true) await ledger.upgrade()
  const t = { dir, env, ledger, tickets: new UploadTickets(env, ledger) }
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

const contracts = new WeakMap<TestLedger, LmdbLedger>()

/** the ledger contract over a test ledger's LMDB classes (for exports, imports and services), made once per ledger */
export function contractOf (t: TestLedger): LmdbLedger {
  let c = contracts.get(t)
  if (c == null) contracts.set(t, c = new LmdbLedger(t.env, t.ledger))
  return c
}

/** the whole text of an export's chunks */
export async function textOf (chunks: AsyncIterable<string>): Promise<string> {
  const out: string[] = []
  for await (const c of chunks) out.push(c)
  return out.join('')
}

/** the x402 payments' database (keyed by payer and nonce, 52 bytes) */
export function paymentsBinary (env: LedgerEnv): Database<unknown, Buffer> {
  return env.db<unknown>('payments-binary', { keyEncoding: 'binary' }) as Database<unknown, Buffer>
}

/** a pin's array: where its status, source and payment are (stored.ts PIN_FIELDS, after the layout number) */
export const PIN_AT = { status: 6, source: 15, payment: 16 }

/**
 * The ledger as the layout before wrote it: every payment in `payments` under its id as text, purpose
 * and time as strings (layout 1); pins naming their status, source and payment method, and their
 * payment's asset as its bytes; schema version 2.
 */
export async function toLayout1 (env: LedgerEnv, ledger: PinLedger): Promise<void> {
  const records = [...ledger.allPayments()]
  const hex = (s: string): Buffer => Buffer.from(s.replace(/^0x/, ''), 'hex')
  const assets = env.fact('assets') as string[]
  await env.transaction(() => {
    const pins = env.db<unknown[]>('pins')
    for (const { key, value } of [...pins.getRange()]) {
      const v = [...value]
      v[PIN_AT.status] = (['queued', 'pinning', 'pinned', 'failed'] as const)[v[PIN_AT.status] as number]
      v[PIN_AT.source] = (['upload', 'pin'] as const)[v[PIN_AT.source] as number]
      const ref = v[PIN_AT.payment]
      if (Array.isArray(ref)) v[PIN_AT.payment] = [ref[0], hex(assets[ref[1] as number] as string), (['x402', 'operator-token'] as const)[ref[2] as number]]
      pins.put(key, v)
    }
    env.setUpgraded('compact:pin-numbers', false)
    const text = env.db<unknown>('payments')
    for (const p of records) {
      const key = paymentKey(p.id)
      if (key != null) paymentsBinary(env).remove(key)
      const uuidBytes = /^[0-9a-f-]{36}$/.test(p.requestid) ? hex(p.requestid.replaceAll('-', '')) : p.requestid
      text.put(p.id, [1, uuidBytes, p.purpose, p.id.startsWith(`${p.payer}:`) ? null : hex(p.payer), p.amount, p.network, hex(p.tx as string), p.at, hex(p.proof)])
    }
    env.setUpgraded('compact:payment-keys', false)
    void env.setFact('schemaVersion', 2)
  })
}
