/**
 * `pind export-ledger` / `pind import-ledger` from the bundle, on ledgers
 * written directly with PinLedger: the round trip (export → import into a new
 * dir → the same ledger, record for record, block references and fetch queue
 * included), requeueing without blocks, --merge, CSV quoting, filters,
 * refused inputs (truncated, unknown version, bad lines) with nothing written,
 * usage errors, and export through a running serve. Upload tickets (unused
 * and used) make the round trip too, as version 2 lines; version 1 files
 * (no tickets) still import.
 */
import { spawn } from 'node:child_process'
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { beforeAll, describe, expect, it } from 'vitest'
import { isoMicros } from '../../src/ledger/clock.js'
import { openLedgerEnv } from '../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../src/ledger/lmdb/pins.js'
import type { PaymentRecord, PinRecord } from '../../src/ledger/records.js'
import { TicketClaimError, ticketPurpose, UploadTickets, type UploadTicket } from '../../src/ledger/lmdb/tickets.js'
import { BUNDLE, runPind, startPind, tempDir } from '../helpers/pind.js'

const A = '0x' + 'a1'.repeat(20)
const B = '0x' + 'b2'.repeat(20)
const C = '0x' + 'c3'.repeat(20)
const NET = 'eip155:167000'
const ASSET = '0x07d83526730c7438048D55A4fc0b850e2aaB6f0b'
const FAR = '2099-01-01T00:00:00.000Z'
const TRICKY = 'report, "final"\nversion 2'

let cids: string[] = []
let cidV0 = ''

beforeAll(async () => {
  cids = await Promise.all(Array.from({ length: 12 }, async (_, i) => CID.create(1, raw.code, await sha256.digest(new TextEncoder().encode(`block ${i}`))).toString()))
  cidV0 = CID.create(0, 0x70, await sha256.digest(new TextEncoder().encode('v0 root'))).toString()
})

const us = (iso: string, extraUs = 0): number => Date.parse(iso) * 1000 + extraUs

function pin (requestid: string, owner: string, cid: string, createdUs: number, extra: Partial<PinRecord> = {}, method: 'x402' | 'operator-token' = 'x402'): PinRecord {
  return {
    requestid, owner, cid, origins: [], meta: {}, status: 'pinned', statusDetails: 'pinned: 2 blocks, 20 bytes',
    created: isoMicros(createdUs), createdUs, months: 3, pinnedUntil: FAR, dagSize: 20, source: 'pin', maxBytes: 1_000_000,
    payment: method === 'x402'
      ? { id: `${owner}:0x${requestid.padStart(64, '0')}`, payer: owner, amount: '1500', network: NET, asset: ASSET, tx: `0x${'f'.repeat(63)}${requestid.slice(-1)}`, settledAt: isoMicros(createdUs), method }
      : { id: `operator-token:jti-${requestid}`, payer: owner, amount: '0', network: NET, asset: ASSET, method },
    ...extra
  }
}

function paymentOf (p: PinRecord, purpose: string): PaymentRecord {
  return { id: p.payment.id, requestid: p.requestid, purpose, payer: p.payment.payer, amount: p.payment.amount, network: NET, ...(p.payment.tx != null ? { tx: p.payment.tx } : {}), at: p.payment.settledAt as string, proof: `sha256:${p.requestid}` }
}

/**
 * A ledger with every kind of record: pinned (upload and by CID, CIDv0), a
 * name that needs CSV quoting and one a spreadsheet would run, a queued pin
 * with fetch state (operator token, no payment), failed, unpinned, expired
 * but not swept, and a replaced pin with its replacement. `live` leaves out
 * what a running serve would change on its own (the expired pin).
 */
async function seed (dir: string, { live = false } = {}): Promise<void> {
  const env = await openLedgerEnv(join(dir, 'ledger.mdb'))
  try {
    const ledger = new PinLedger(env)
    const c = cids
    const p1 = pin('11111111-0000-4000-8000-000000000001', A, c[0] as string, us('2025-01-10T08:00:00Z'), { name: 'plain', source: 'upload', fileSize: 12 })
    await ledger.create(p1, paymentOf(p1, `upload:${p1.cid}`), [c[0] as string, c[1] as string])
    const p2 = pin('22222222-0000-4000-8000-000000000002', B, cidV0, us('2025-02-10T09:30:00Z', 123_456), {
      name: TRICKY, origins: ['/ip4/10.0.0.1/tcp/4001/p2p/12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo'], meta: { app: 'books, "2025"', lang: 'fr' }
    })
    await ledger.create(p2, paymentOf(p2, `pin:${p2.cid}`), [cidV0, c[2] as string])
    const p3 = pin('33333333-0000-4000-8000-000000000003', A, c[3] as string, us('2025-03-10T10:00:00Z', 7), {
      name: '=HYPERLINK("http://evil")', status: 'queued', statusDetails: 'waiting to retry', dagSize: undefined,
      fetch: { attempts: 2, giveUpAt: FAR, nextAttemptAt: '2098-12-31T00:00:00.000Z', lastError: 'stalled: no block for 60 s' }
    }, 'operator-token')
    delete p3.dagSize
    await ledger.create(p3)
    const p4 = pin('44444444-0000-4000-8000-000000000004', B, c[4] as string, us('2025-04-10T10:00:00Z'), { status: 'queued' })
    await ledger.create(p4, paymentOf(p4, `pin:${p4.cid}`))
    await ledger.failFetch(p4.requestid, 'failed: the DAG is larger than the 1000000 bytes paid for; nothing was kept')
    const p5 = pin('55555555-0000-4000-8000-000000000005', A, c[5] as string, us('2025-05-10T10:00:00Z'))
    await ledger.create(p5, paymentOf(p5, `pin:${p5.cid}`), [c[5] as string, c[1] as string])
    await ledger.remove(p5.requestid, 'unpinned', new Date('2025-05-20T00:00:00Z'))
    const old = pin('77777777-0000-4000-8000-000000000007', B, c[7] as string, us('2025-07-10T10:00:00Z'))
    await ledger.create(old, paymentOf(old, `pin:${old.cid}`), [c[7] as string])
    const repl = pin('88888888-0000-4000-8000-000000000008', B, c[8] as string, us('2025-08-10T10:00:00Z'), { status: 'queued', replaces: old.requestid })
    await ledger.create(repl, paymentOf(repl, `pin:${repl.cid}:replaces:${old.requestid}`))
    await ledger.finishFetch(repl.requestid, [c[8] as string, c[9] as string], 40, 'pinned: 2 blocks, 40 bytes')
    if (!live) {
      const p6 = pin('66666666-0000-4000-8000-000000000006', A, c[6] as string, us('2025-06-10T10:00:00Z'), { pinnedUntil: '2025-07-10T10:00:00.000Z' })
      await ledger.create(p6, paymentOf(p6, `pin:${p6.cid}`), [c[6] as string])
    }
  } finally {
    await env.close()
  }
}

const UNUSED = '0aaaaaaa-0000-4000-8000-00000000000a'
const USED = '0bbbbbbb-0000-4000-8000-00000000000b'
const TICKET_PIN = '99999999-0000-4000-8000-000000000009'

function ticket (id: string, payer: string, at: string, nonce: string): { ticket: UploadTicket, payment: PaymentRecord } {
  const paymentId = `${payer}:0x${nonce.repeat(64)}`
  const tx = `0x${nonce.repeat(63)}e`
  return {
    ticket: { id, payer, bytes: 3_000_000, months: 2, amount: '4500', paymentId, network: NET, asset: ASSET, tx, createdAt: at, expiresAt: FAR },
    payment: { id: paymentId, requestid: id, purpose: ticketPurpose(id), payer, amount: '4500', network: NET, tx, at, proof: `sha256:${id}` }
  }
}

/**
 * Two upload tickets, as serve records them: one bought and unused (payer C),
 * one bought and used by an upload (payer A), whose claim made a pin.
 */
async function seedTickets (dir: string): Promise<void> {
  const env = await openLedgerEnv(join(dir, 'ledger.mdb'))
  try {
    const ledger = new PinLedger(env)
    const tickets = new UploadTickets(env, ledger)
    const unused = ticket(UNUSED, C, '2025-09-01T10:00:00.000Z', 'c')
    await tickets.record(unused.ticket, unused.payment)
    const used = ticket(USED, A, '2025-09-02T10:00:00.000Z', 'd')
    await tickets.record(used.ticket, used.payment)
    const p = pin(TICKET_PIN, A, cids[10] as string, us('2025-09-03T10:00:00Z'), { source: 'upload', fileSize: 30, months: 2 })
    p.payment = { id: used.ticket.paymentId, payer: A, amount: '4500', network: NET, asset: ASSET, tx: used.ticket.tx as string, settledAt: used.payment.at, method: 'x402' }
    await tickets.claim(USED, A, p, [cids[10] as string, cids[11] as string], new Date('2025-09-03T10:00:00.000Z'))
  } finally {
    await env.close()
  }
}

/** Everything a ledger holds, read back through PinLedger (and its upload tickets). */
async function snapshot (dir: string): Promise<unknown> {
  const env = await openLedgerEnv(join(dir, 'ledger.mdb'))
  try {
    const ledger = new PinLedger(env)
    const pins = [...ledger.all()]
    return {
      pins,
      blocks: pins.map(p => [p.requestid, ledger.blocksOf(p.requestid)]),
      payments: [...ledger.allPayments()],
      tickets: [...new UploadTickets(env, ledger).all()],
      queue: ledger.pendingFetches(),
      referenced: [...ledger.referencedBlocks()]
    }
  } finally {
    await env.close()
  }
}

const lines = (text: string): Array<Record<string, any>> => text.trim().split('\n').map(l => JSON.parse(l) as Record<string, any>)
const body = (text: string): string[] => text.trim().split('\n').filter(l => !l.startsWith('{"type":"header"'))
const ids = (text: string, type = 'pin'): string[] => lines(text).filter(l => l.type === type).map(l => (type === 'pin' ? l.requestid : l.payment_id) as string)

/** RFC 4180 parser for the checks. */
function parseCsv (text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let cell = ''
  let q = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string
    if (q) {
      if (ch === '"' && text[i + 1] === '"') { cell += '"'; i++ } else if (ch === '"') q = false
      else cell += ch
    } else if (ch === '"') q = true
    else if (ch === ',') { row.push(cell); cell = '' } else if (ch === '\r' && text[i + 1] === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; i++ } else cell += ch
  }
  if (cell !== '' || row.length > 0) { row.push(cell); rows.push(row) }
  return rows
}

/** Runs pind with `input` on its stdin. */
async function pipeTo (args: string[], input: string): Promise<{ code: number | null, out: string, err: string }> {
  const p = spawn(process.execPath, [BUNDLE, ...args], { env: { ...process.env, PIND_LOG_LEVEL: 'warn' }, stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  p.stdout.on('data', (b: Buffer) => { out += b.toString() })
  p.stderr.on('data', (b: Buffer) => { err += b.toString() })
  p.stdin.end(input)
  const code = await new Promise<number | null>(resolve => p.on('exit', resolve))
  return { code, out, err }
}

async function exportTo (dir: string, args: string[] = []): Promise<{ code: number | null, out: string, err: string }> {
  return await runPind(['export-ledger', '--data-dir', dir, ...args])
}

describe('pind export-ledger / import-ledger', () => {
  it('round-trips: export --with-blocks → import into a new dir → the same ledger and the same export', async () => {
    const src = tempDir()
    await seed(src)
    const file = join(tempDir(), 'ledger.jsonl')
    const ex = await exportTo(src, ['--with-blocks', '--output', file])
    expect(ex.code, ex.err).toBe(0)
    expect(ex.err).toMatch(new RegExp(`exported 8 pins, 7 payments and 0 upload tickets .* on the data dir ${src} \\(no serve running\\)`))
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(existsSync(`${file}.partial`)).toBe(false)

    const text = readFileSync(file, 'utf8')
    const all = lines(text)
    expect(all[0]).toMatchObject({ type: 'header', schema: 'pind-ledger-export', version: 2, records: 'all', with_blocks: true, filters: { since: null, until: null, owner: null, status: null } })
    expect(Date.parse(all[0]?.exported_at)).toBeGreaterThan(Date.now() - 60_000)
    expect(all.at(-1)).toEqual({ type: 'end', pins: 8, payments: 7, tickets: 0 })
    const byId = new Map(all.filter(l => l.type === 'pin').map(l => [l.requestid, l]))
    expect(byId.get('22222222-0000-4000-8000-000000000002')).toMatchObject({
      owner: B, cid: cidV0, name: TRICKY, created: '2025-02-10T09:30:00.123456Z', status: 'pinned', effective_status: 'pinned',
      amount: '1500', amount_usdc: '0.001500', network: NET, asset: ASSET, payment_method: 'x402', meta: { app: 'books, "2025"', lang: 'fr' },
      blocks: [CID.parse(cidV0).toV1().toString(), cids[2]]
    })
    expect(byId.get('33333333-0000-4000-8000-000000000003')).toMatchObject({ status: 'queued', payment_method: 'operator-token', amount: '0', settlement_tx: null, fetch_attempts: 2, fetch_last_error: 'stalled: no block for 60 s', dag_size: null })
    expect(byId.get('55555555-0000-4000-8000-000000000005')).toMatchObject({ effective_status: 'removed', removed_at: '2025-05-20T00:00:00.000Z', removed_why: 'unpinned', blocks: [] })
    expect(byId.get('66666666-0000-4000-8000-000000000006')).toMatchObject({ status: 'pinned', effective_status: 'expired' })
    expect(byId.get('77777777-0000-4000-8000-000000000007')).toMatchObject({ effective_status: 'removed', removed_why: 'replaced', replaced_by: '88888888-0000-4000-8000-000000000008' })
    expect(byId.get('44444444-0000-4000-8000-000000000004')).toMatchObject({ status: 'failed', effective_status: 'failed' })
    // every line carries every column
    expect(Object.keys(byId.get('11111111-0000-4000-8000-000000000001') as object)).toEqual(Object.keys(byId.get('33333333-0000-4000-8000-000000000003') as object))

    const dst = join(tempDir(), 'new-data-dir')
    const im = await runPind(['import-ledger', file, '--data-dir', dst, '--json'])
    expect(im.code, im.err).toBe(0)
    expect(JSON.parse(im.out)).toMatchObject({ pins: 8, payments: 7, tickets: 0, requeued: 0, withBlocks: 8 })
    expect(im.err).toMatch(`on the data dir ${dst} (no serve running)`)
    expect(statSync(dst).mode & 0o777).toBe(0o700)
    expect(existsSync(join(dst, 'serve.lock'))).toBe(false)

    // the same ledger, record for record (block references and fetch queue included) …
    expect(await snapshot(dst)).toEqual(await snapshot(src))
    // (stdin works too: it is copied to a temporary file, which goes afterwards)
    const dst2 = tempDir()
    const viaStdin = await pipeTo(['import-ledger', '-', '--data-dir', dst2], text)
    expect(viaStdin.code, viaStdin.err).toBe(0)
    expect(await snapshot(dst2)).toEqual(await snapshot(src))
    expect(readdirSync(dst2).sort()).toEqual(['ledger.mdb', 'ledger.mdb-lock'])
    // … and the same export, apart from when it was made
    const again = await exportTo(dst, ['--with-blocks'])
    expect(again.code, again.err).toBe(0)
    expect(body(again.out)).toEqual(body(text))
  })

  it('import without block lists puts live pinned pins back in the fetch queue; --merge adds a disjoint export and refuses ids it has', async () => {
    const src = tempDir()
    await seed(src)
    const exA = await exportTo(src, ['--owner', A.toUpperCase().replace('0X', '0x')])
    expect(exA.code, exA.err).toBe(0)
    expect(new Set(lines(exA.out).filter(l => l.type !== 'header' && l.type !== 'end').map(l => l.owner ?? l.payer))).toEqual(new Set([A]))
    const fileA = join(tempDir(), 'a.jsonl')
    writeFileSync(fileA, exA.out)

    const dst = tempDir()
    const im = await runPind(['import-ledger', fileA, '--data-dir', dst])
    expect(im.code, im.err).toBe(0)
    expect(im.out).toMatch(/imported 4 pins, 3 payments and 0 upload tickets/)
    expect(im.out).toMatch(/1 pinned pins had no block list/)
    const after = await snapshot(dst) as { pins: PinRecord[], queue: string[], referenced: string[] }
    const p1 = after.pins.find(p => p.requestid.startsWith('1111'))
    expect(p1).toMatchObject({ status: 'queued', fetch: { attempts: 0 } })
    expect(Date.parse(p1?.fetch?.giveUpAt as string)).toBeGreaterThan(Date.now() + 23 * 3600_000)
    expect(after.queue).toEqual(['11111111-0000-4000-8000-000000000001', '33333333-0000-4000-8000-000000000003'])
    // the expired pin stays as it was (the sweeper's business), the unpinned one too
    expect(after.pins.find(p => p.requestid.startsWith('6666'))?.status).toBe('pinned')
    expect(after.pins.find(p => p.requestid.startsWith('5555'))?.removed?.why).toBe('unpinned')
    expect(after.referenced).toEqual([])

    // not into a ledger that has pins, unless --merge
    const refused = await runPind(['import-ledger', fileA, '--data-dir', dst])
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(/already holds pins, payments or upload tickets.*--merge/)
    const dup = await runPind(['import-ledger', fileA, '--data-dir', dst, '--merge'])
    expect(dup.code).toBe(1)
    expect(dup.err).toMatch(/line 2: pin 11111111-0000-4000-8000-000000000001 is already in the ledger/)
    expect(dup.err).toMatch(/nothing was imported/)

    const exB = await exportTo(src, ['--owner', B])
    const fileB = join(tempDir(), 'b.jsonl')
    writeFileSync(fileB, exB.out)
    const merged = await runPind(['import-ledger', fileB, '--data-dir', dst, '--merge', '--json'])
    expect(merged.code, merged.err).toBe(0)
    expect(JSON.parse(merged.out)).toMatchObject({ pins: 4, payments: 4, requeued: 2 })
    const both = await snapshot(dst) as { pins: PinRecord[], payments: PaymentRecord[] }
    expect(both.pins.map(p => p.requestid)).toEqual(ids(exA.out).concat(ids(exB.out)).sort())
    expect(both.payments).toEqual((await snapshot(src) as { payments: PaymentRecord[] }).payments)
  })

  it('refuses a truncated file, an unknown schema version and bad lines, writing nothing', async () => {
    const src = tempDir()
    await seed(src)
    const ex = await exportTo(src, ['--with-blocks'])
    const dir = tempDir()
    const write = (name: string, text: string): string => { const f = join(dir, name); writeFileSync(f, text); return f }

    const all = ex.out.trimEnd().split('\n')
    const truncated = write('truncated.jsonl', all.slice(0, -3).join('\n') + '\n')
    const fresh = join(tempDir(), 'fresh')
    const t = await runPind(['import-ledger', truncated, '--data-dir', fresh])
    expect(t.code).toBe(1)
    expect(t.err).toMatch(/without the end line: it is truncated/)
    expect(existsSync(fresh)).toBe(false)

    // an existing ledger: still untouched
    const existing = tempDir()
    await (await openLedgerEnv(join(existing, 'ledger.mdb'))).close()
    const before = await snapshot(existing)
    const t2 = await runPind(['import-ledger', truncated, '--data-dir', existing])
    expect(t2.code).toBe(1)
    expect(await snapshot(existing)).toEqual(before)

    const header = JSON.parse(all[0] as string) as Record<string, unknown>
    const v3 = write('v3.jsonl', [JSON.stringify({ ...header, version: 3 }), ...all.slice(1)].join('\n') + '\n')
    const v = await runPind(['import-ledger', v3, '--data-dir', existing])
    expect(v.code).toBe(1)
    expect(v.err).toMatch(/line 1: export schema version 3 is not supported; this pind reads versions 1 and 2/)

    const broken = [...all]
    const third = JSON.parse(broken[3] as string) as Record<string, unknown>
    broken[3] = JSON.stringify({ ...third, status: 'lost', amount: 12 })
    broken[5] = broken[4] as string // a duplicate
    const bad = write('bad.jsonl', broken.join('\n') + '\n')
    const b = await runPind(['import-ledger', bad, '--data-dir', existing])
    expect(b.code).toBe(1)
    expect(b.err).toMatch(/line 4: amount must be a whole number of atomic units/)
    expect(b.err).toMatch(/line 6: pin \S+ appears twice/)
    expect(b.err).toMatch(/the end line counts 8 pins, 7 payments and 0 tickets, but the file holds 7, 7 and 0|line 6/)
    expect(await snapshot(existing)).toEqual(before)

    const csv = write('pins.csv', (await exportTo(src, ['--format', 'csv'])).out)
    const c = await runPind(['import-ledger', csv, '--data-dir', existing])
    expect(c.code).toBe(1)
    expect(c.err).toMatch(/line 1: not JSON \(is this a CSV export\?/)
    const missing = await runPind(['import-ledger', join(dir, 'nope.jsonl'), '--data-dir', existing])
    expect(missing.code).toBe(1)
    expect(missing.err).toMatch(/cannot read .*nope\.jsonl/)
    expect(await snapshot(existing)).toEqual(before)
  })

  it('writes CSV per RFC 4180: a header row, quoted commas/quotes/newlines, JSON cells, formula-safe names', async () => {
    const src = tempDir()
    await seed(src)
    const r = await exportTo(src, ['--format', 'csv', '--json'])
    expect(r.code, r.err).toBe(0)
    expect(JSON.parse(r.err)).toMatchObject({ format: 'csv', records: 'pins', pins: 8, payments: 0, tickets: 0, via: 'data-dir', output: null, schema: 'pind-ledger-export', version: 2 })
    expect(r.out.endsWith('\r\n')).toBe(true)
    const rows = parseCsv(r.out)
    const head = rows[0] as string[]
    expect(head.slice(0, 4)).toEqual(['schema_version', 'requestid', 'owner', 'cid'])
    expect(rows).toHaveLength(9)
    for (const row of rows) expect(row).toHaveLength(head.length)
    const rec = (id: string): Record<string, string> => Object.fromEntries(head.map((h, i) => [h, (rows.find(x => x[1]?.startsWith(id)) as string[])[i] as string]))
    const p2 = rec('2222')
    expect(p2).toMatchObject({ schema_version: '2', name: TRICKY, created: '2025-02-10T09:30:00.123456Z', amount: '1500', amount_usdc: '0.001500', replaces: '' })
    expect(JSON.parse(p2.meta as string)).toEqual({ app: 'books, "2025"', lang: 'fr' })
    expect(JSON.parse(p2.origins as string)).toHaveLength(1)
    expect(r.out).toContain('"report, ""final""\nversion 2"')
    expect(rec('3333').name).toBe('\'=HYPERLINK("http://evil")')
    expect(rec('1111').name).toBe('plain')

    const pay = await exportTo(src, ['--format', 'csv', '--records', 'payments', '--since', '2025-02-01', '--until', '2025-06-01'])
    expect(pay.code, pay.err).toBe(0)
    const prow = parseCsv(pay.out)
    expect(prow[0]).toEqual(['schema_version', 'payment_id', 'requestid', 'purpose', 'payer', 'amount', 'amount_usdc', 'network', 'settlement_tx', 'at', 'proof'])
    expect(prow.slice(1).map(x => x[2]).sort()).toEqual(['22222222-0000-4000-8000-000000000002', '44444444-0000-4000-8000-000000000004', '55555555-0000-4000-8000-000000000005'])
  })

  it('filters by time (created / paid at), owner and status class', async () => {
    const src = tempDir()
    await seed(src)
    const pick = async (args: string[], type = 'pin'): Promise<string[]> => {
      const r = await exportTo(src, args)
      expect(r.code, r.err).toBe(0)
      return ids(r.out, type).map(id => type === 'pin' ? id.slice(0, 1) : id)
    }
    expect(await pick(['--since', '2025-03-10T10:00:00.000007Z', '--until', '2025-07-10T10:00:00Z'])).toEqual(['3', '4', '5', '6'])
    const h = lines((await exportTo(src, ['--since', '2025-03-10T10:00:00.000007Z', '--until', '2025-07-10', '--owner', A.toUpperCase().replace('0X', '0x')])).out)[0]
    expect(h?.filters).toEqual({ since: '2025-03-10T10:00:00.000007Z', until: '2025-07-10T00:00:00.000Z', owner: A, status: null })
    expect(await pick(['--since', '2025-03-10T10:00:00.000008Z', '--until', '2025-07-10T12:00:00+02:00'])).toEqual(['4', '5', '6'])
    expect(await pick(['--owner', B])).toEqual(['2', '4', '7', '8'])
    expect(await pick(['--status', 'removed'])).toEqual(['5', '7'])
    expect(await pick(['--status', 'expired,failed'])).toEqual(['4', '6'])
    expect(await pick(['--status', 'pinned', '--owner', A])).toEqual(['1'])
    expect(await pick(['--status', 'queued,pinning'])).toEqual(['3'])
    // payments: by payer and by the class of the pin they paid for
    const pays = await pick(['--status', 'removed', '--records', 'payments'], 'payment')
    expect(pays).toHaveLength(2)
    const r = await exportTo(src, ['--status', 'removed', '--records', 'payments'])
    expect(lines(r.out)[0]).toMatchObject({ records: 'payments', filters: { status: ['removed'] } })
    expect(lines(r.out).filter(l => l.type === 'payment').map(l => l.requestid).sort()).toEqual(['55555555-0000-4000-8000-000000000005', '77777777-0000-4000-8000-000000000007'])
    expect(lines(r.out).at(-1)).toEqual({ type: 'end', pins: 0, payments: 2, tickets: 0 })
  })

  it('usage errors exit 2; a missing or busy data dir exits 1 with a clear message; --help has examples', async () => {
    for (const args of [['--format', 'xml'], ['--format', 'csv', '--records', 'all'], ['--format', 'csv', '--with-blocks'], ['--since', 'yesterday'], ['--since', '2025-02-30'], ['--owner', '0x123'], ['--status', 'pinned,gone'], ['--since', '2025-02-01', '--until', '2025-01-01']]) {
      const r = await exportTo(tempDir(), args)
      expect(r.code, args.join(' ')).toBe(2)
      expect(r.err).toMatch(/^pind export-ledger: /)
    }
    expect((await exportTo(tempDir(), ['--bogus'])).code).toBe(2)
    expect((await runPind(['import-ledger'])).code).toBe(2)

    const missing = join(tempDir(), 'nope')
    const m = await exportTo(missing)
    expect(m.code).toBe(1)
    expect(m.err).toMatch(`data dir ${missing} does not exist`)
    const notPind = await exportTo(tempDir())
    expect(notPind.code).toBe(1)
    expect(notPind.err).toMatch(/is not a pind data dir \(no ledger\.mdb\)/)

    const busy = tempDir()
    await seed(busy)
    writeFileSync(join(busy, 'serve.lock'), JSON.stringify({ pid: process.pid, start: null, holder: 'pind gc' }))
    const l = await exportTo(busy)
    expect(l.code).toBe(1)
    expect(l.err).toMatch(`data dir ${busy} is in use by pind gc (pid ${process.pid})`)
    const li = await runPind(['import-ledger', '-', '--data-dir', busy])
    expect(li.code).toBe(1)
    expect(li.err).toMatch(/in use by pind gc/)

    const ro = tempDir()
    await seed(ro)
    const roOut = tempDir()
    chmodSync(roOut, 0o500)
    const w = await exportTo(ro, ['--output', join(roOut, 'x.jsonl')])
    if (process.getuid?.() !== 0) {
      expect(w.code).toBe(1)
      expect(w.err).toMatch(/cannot write .*x\.jsonl\.partial/)
    }

    for (const cmd of ['export-ledger', 'import-ledger']) {
      const h = await runPind([cmd, '--help'])
      expect(h.code).toBe(0)
      expect(h.out).toMatch(/Examples:\n\s+pind /)
    }
  })

  it('carries upload tickets: unused and used, with their payments, round trip; version 1 files still import; CSV and --merge', async () => {
    const src = tempDir()
    await seed(src)
    await seedTickets(src)
    const file = join(tempDir(), 'ledger.jsonl')
    const ex = await exportTo(src, ['--with-blocks', '--output', file, '--json'])
    expect(ex.code, ex.err).toBe(0)
    expect(JSON.parse(ex.err)).toMatchObject({ pins: 9, payments: 9, tickets: 2 })
    const text = readFileSync(file, 'utf8')
    const all = lines(text)
    expect(all.at(-1)).toEqual({ type: 'end', pins: 9, payments: 9, tickets: 2 })
    // after the payments, ascending ticket_id, every column on every line
    expect(all.slice(-3, -1).map(l => l.type)).toEqual(['ticket', 'ticket'])
    expect(all.at(-3)).toEqual({
      type: 'ticket', ticket_id: UNUSED, payer: C, bytes: 3_000_000, months: 2, amount: '4500', amount_usdc: '0.004500', asset: ASSET, network: NET,
      payment_id: `${C}:0x${'c'.repeat(64)}`, settlement_tx: `0x${'c'.repeat(63)}e`, created_at: '2025-09-01T10:00:00.000Z', expires_at: FAR,
      used: false, claimed_by: null, claimed_at: null, failed_bytes: 0
    })
    expect(all.at(-2)).toMatchObject({ ticket_id: USED, payer: A, used: true, claimed_by: TICKET_PIN, claimed_at: '2025-09-03T10:00:00.000Z' })
    expect(all.find(l => l.type === 'payment' && l.requestid === UNUSED)).toMatchObject({ purpose: `ticket:${UNUSED}`, payer: C, amount: '4500' })
    expect(all.find(l => l.type === 'pin' && l.requestid === TICKET_PIN)).toMatchObject({ payment_id: `${A}:0x${'d'.repeat(64)}`, blocks: [cids[10], cids[11]] })

    // into a new data dir: the same ledger, tickets included, and the same export
    const dst = join(tempDir(), 'new-data-dir')
    const im = await runPind(['import-ledger', file, '--data-dir', dst, '--json'])
    expect(im.code, im.err).toBe(0)
    expect(JSON.parse(im.out)).toMatchObject({ pins: 9, payments: 9, tickets: 2, requeued: 0 })
    expect(await snapshot(dst)).toEqual(await snapshot(src))
    const again = await exportTo(dst, ['--with-blocks'])
    expect(body(again.out)).toEqual(body(text))
    // there: the unused ticket can be used once, the used one stays used
    const env = await openLedgerEnv(join(dst, 'ledger.mdb'))
    try {
      const ledger = new PinLedger(env)
      const tickets = new UploadTickets(env, ledger)
      expect(() => tickets.check(USED, A)).toThrow(TicketClaimError)
      expect(tickets.check(UNUSED, C.toUpperCase().replace('0X', '0x')).claimed).toBeUndefined()
      const p = pin('aaaaaaaa-0000-4000-8000-00000000000a', C, cids[11] as string, us('2026-01-01T00:00:00Z'), { source: 'upload' })
      await tickets.claim(UNUSED, C, p, [cids[11] as string])
      await expect(tickets.claim(UNUSED, C, { ...p, requestid: 'aaaaaaaa-0000-4000-8000-00000000000b' }, [])).rejects.toThrow(/used already/)
      // its payment is recorded, and names the ticket
      expect(ledger.payment(`${C}:0x${'c'.repeat(64)}`)).toMatchObject({ requestid: UNUSED, purpose: `ticket:${UNUSED}` })
    } finally {
      await env.close()
    }

    // --merge refuses ticket ids the ledger holds
    const onlyTickets = await exportTo(src, ['--records', 'tickets'])
    expect(lines(onlyTickets.out).at(-1)).toEqual({ type: 'end', pins: 0, payments: 0, tickets: 2 })
    const ticketsFile = join(tempDir(), 'tickets.jsonl')
    writeFileSync(ticketsFile, onlyTickets.out)
    const dup = await runPind(['import-ledger', ticketsFile, '--data-dir', dst, '--merge'])
    expect(dup.code).toBe(1)
    expect(dup.err).toMatch(`line 2: upload ticket ${UNUSED} is already in the ledger`)
    expect(dup.err).toMatch(`line 3: upload ticket ${USED} is already in the ledger`)
    // (into an empty ledger, alone, they import)
    const alone = await runPind(['import-ledger', ticketsFile, '--data-dir', tempDir(), '--json'])
    expect(JSON.parse(alone.out)).toMatchObject({ pins: 0, payments: 0, tickets: 2 })

    // CSV: one row per ticket; filters by payer, time bought and the class of the pin it made
    const csv = await exportTo(src, ['--format', 'csv', '--records', 'tickets'])
    expect(csv.code, csv.err).toBe(0)
    const rows = parseCsv(csv.out)
    expect(rows[0]).toEqual(['schema_version', 'ticket_id', 'payer', 'bytes', 'months', 'amount', 'amount_usdc', 'asset', 'network', 'payment_id', 'settlement_tx', 'created_at', 'expires_at', 'used', 'claimed_by', 'claimed_at', 'failed_bytes'])
    expect(rows.slice(1).map(r => [r[0], r[1], r[13]])).toEqual([['2', UNUSED, 'false'], ['2', USED, 'true']])
    const byOwner = lines((await exportTo(src, ['--records', 'tickets', '--owner', C])).out).filter(l => l.type === 'ticket').map(l => l.ticket_id)
    expect(byOwner).toEqual([UNUSED])
    const since = lines((await exportTo(src, ['--since', '2025-09-02'])).out).filter(l => l.type === 'ticket').map(l => l.ticket_id)
    expect(since).toEqual([USED])
    const pinned = lines((await exportTo(src, ['--status', 'pinned', '--owner', A])).out)
    expect(pinned.filter(l => l.type === 'ticket').map(l => l.ticket_id)).toEqual([USED])
    expect(pinned.filter(l => l.type === 'payment').map(l => l.requestid).sort()).toEqual([USED, '11111111-0000-4000-8000-000000000001'].sort())

    // a version 1 file (a pind before tickets: no ticket lines, no tickets count) still imports
    const old = await exportTo(src, ['--records', 'pins', '--with-blocks'])
    const v1 = old.out.trimEnd().split('\n').map(l => JSON.parse(l) as Record<string, unknown>)
      .map(l => l.type === 'header' ? { ...l, version: 1, records: 'all' } : l.type === 'end' ? { type: 'end', pins: l.pins, payments: 0 } : l)
    const v1File = join(tempDir(), 'v1.jsonl')
    writeFileSync(v1File, v1.map(l => JSON.stringify(l)).join('\n') + '\n')
    const fromV1 = await runPind(['import-ledger', v1File, '--data-dir', tempDir(), '--json'])
    expect(fromV1.code, fromV1.err).toBe(0)
    expect(JSON.parse(fromV1.out)).toMatchObject({ pins: 9, payments: 0, tickets: 0 })
    // … and a ticket line does not belong in one
    const withTicket = [...v1.slice(0, -1), all.at(-3), { type: 'end', pins: 9, payments: 0 }]
    writeFileSync(v1File, withTicket.map(l => JSON.stringify(l)).join('\n') + '\n')
    const mixed = await runPind(['import-ledger', v1File, '--data-dir', tempDir()])
    expect(mixed.code).toBe(1)
    expect(mixed.err).toMatch(/a ticket line in a version 1 export/)
  })

  it('exports through a running serve (streamed over the admin socket); import refuses while serve runs', async () => {
    const dataDir = tempDir()
    await seed(dataDir, { live: true })
    const pind = await startPind({ dataDir })
    let stopped = false
    try {
      const r = await exportTo(dataDir, ['--with-blocks'])
      expect(r.code, r.err).toBe(0)
      expect(r.err).toMatch(`exported 7 pins, 6 payments and 0 upload tickets (jsonl, schema version 2, ${Buffer.byteLength(r.out)} bytes) to stdout`)
      expect(r.err).toMatch(`via the running pind serve (pid ${pind.pid})`)
      expect(lines(r.out).at(-1)).toEqual({ type: 'end', pins: 7, payments: 6, tickets: 0 })

      const file = join(tempDir(), 'pay.csv')
      const c = await exportTo(dataDir, ['--format', 'csv', '--records', 'payments', '--owner', B, '-o', file, '--json'])
      expect(c.code, c.err).toBe(0)
      expect(JSON.parse(c.err)).toMatchObject({ via: 'serve', pid: pind.pid, payments: 4, pins: 0, output: file })
      expect(parseCsv(readFileSync(file, 'utf8'))).toHaveLength(5)
      expect(statSync(file).mode & 0o777).toBe(0o600)

      const bad = await exportTo(dataDir, ['--status', 'nope'])
      expect(bad.code).toBe(2)

      const im = await runPind(['import-ledger', file, '--data-dir', dataDir])
      expect(im.code).toBe(1)
      expect(im.err).toMatch(`a pind serve (pid ${pind.pid}) is running on ${dataDir}: import-ledger works on a stopped data dir only`)

      expect(await pind.stop()).toBe(0)
      stopped = true
      const local = await exportTo(dataDir, ['--with-blocks'])
      expect(local.err).toMatch('(no serve running)')
      expect(body(local.out)).toEqual(body(r.out))
    } finally {
      if (!stopped) await pind.stop()
    }
  })
})
