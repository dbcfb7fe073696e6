/**
 * One answer to "is this denied, and why" from the operator's denials (a
 * real LMDB ledger) and denylist files (real files, really watched): the
 * operator first, then the files with the later one winning; a CID rule
 * covers every path under it, a path rule only that path; the audit log
 * keeps every add and rm; lists follow their files (added lines, removed
 * lines, removed files, a broken rewrite keeping the previous version).
 */
import { appendFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DenylistConfigError, DenylistSources } from '../../../src/denylist/sources.js'
import type { DenialLedger } from '../../../src/ledger/denials.js'
import { openLmdbLedger, type LmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import { createLogger, type Logger } from '../../../src/kernel/log.js'
import { Denials, operatorTarget, withDenial } from '../../../src/service/serving/denials.js'
import { runDenyOp } from '../../../src/service/admin/deny-admin.js'
import { ServePolicy } from '../../../src/service/serving/serve-policy.js'
import { waitFor } from '../../helpers/ports.js'
import { tempDir } from '../../helpers/pind.js'

const A = CID.parse('bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba')
const B = CID.parse('bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy')
const C = CID.parse('bafybeihvvulpp4evxj7x7armbqcyg6uezzuig6jp3lktpbovlqfkuqeuoq')

let dir: string
let store: LmdbLedger
let ledger: DenialLedger
let logged: string[]
let log: Logger
const closers: Array<() => Promise<void>> = []

beforeEach(async () => {
  dir = tempDir('pind-denials-')
  store = await openLmdbLedger(join(dir, 'ledger.mdb'), { graceMs: () => 0 })
  ledger = store.denials
  logged = []
  log = createLogger({ level: 'info', write: (l) => { logged.push(l) } })
})
afterEach(async () => {
  for (const c of closers.splice(0)) await c()
  await store.close()
})

async function sources (paths: string[]): Promise<DenylistSources> {
  const s = new DenylistSources(paths, log)
  await s.load()
  closers.push(async () => { await s.close() })
  return s
}

describe('Denials', () => {
  it('the operator first (a file exception does not lift it), then the last file that matches', async () => {
    const lists = join(dir, 'lists')
    const { mkdirSync } = await import('node:fs')
    mkdirSync(lists)
    writeFileSync(join(lists, 'a.deny'), `/ipfs/${A}\n/ipfs/${B}\n/ipfs/${C}\n`)
    writeFileSync(join(lists, 'b.deny'), `!/ipfs/${B}\n!/ipfs/${C}\n`)
    writeFileSync(join(lists, 'ignored.txt'), `/ipfs/${C}\n`)
    const s = await sources([lists])
    const denials = await Denials.open({ ledger, files: () => s.files() })
    expect(denials.denied(A)).toMatchObject({ source: 'denylist', file: join(lists, 'a.deny'), line: 1, message: 'on the denylist a.deny' })
    expect(denials.denied(B)).toBeUndefined() // b.deny, later, makes an exception
    await runDenyOp({ op: 'add', target: C.toString(), reason: 'court order 12', by: 'alice' }, { ledger, pins: { livePinsOf: async () => [] }, denials })
    expect(denials.denied(C)).toMatchObject({ source: 'operator', reason: 'court order 12', by: 'alice', message: 'denied by the operator of this service (court order 12)' })
  })

  it('a CID rule covers its paths; a path rule only its path (and is not a CID denial)', async () => {
    const denials = await Denials.open({ ledger })
    const deps = { ledger, pins: { livePinsOf: async () => [] }, denials }
    await runDenyOp({ op: 'add', target: `/ipfs/${A}/secret/file.txt`, reason: 'leak', by: 'bob' }, deps)
    await runDenyOp({ op: 'add', target: `ipfs://${B}/dir/*`, reason: 'spam', by: 'bob' }, deps)
    expect(denials.denied(A)).toBeUndefined()
    expect(denials.denied(A, 'secret/file.txt')?.reason).toBe('leak')
    expect(denials.denied(A, 'secret/other.txt')).toBeUndefined()
    expect(denials.denied(B, 'dir/x/y')?.reason).toBe('spam')
    expect(denials.denied(B, 'dir')?.reason).toBe('spam')
    expect(denials.denied(B)).toBeUndefined()
    await runDenyOp({ op: 'add', target: C.toV0().toString(), reason: 'whole', by: 'bob' }, deps)
    expect(denials.denied(C, 'any/path')?.reason).toBe('whole')
    expect(denials.denied(CID.createV1(0x55, C.multihash))?.reason).toBe('whole') // by multihash, any codec
  })

  it('add, re-add and rm are recorded (who, when, why) and survive reopening the ledger', async () => {
    const denials = await Denials.open({ ledger })
    const deps = { ledger, pins: { livePinsOf: async () => [] }, denials }
    const added = await runDenyOp({ op: 'add', target: A.toString(), reason: 'first', by: 'alice' }, deps)
    expect(added.replaced).toBeUndefined()
    const again = await runDenyOp({ op: 'add', target: `/ipfs/${A.toString()}/`, reason: 'second', by: 'bob' }, deps)
    expect((again.replaced as any).reason).toBe('first')
    await expect(runDenyOp({ op: 'rm', target: B.toString(), by: 'carol' }, deps)).rejects.toThrow(/no denial/)
    await store.close()
    store = await openLmdbLedger(join(dir, 'ledger.mdb'), { graceMs: () => 0 })
    ledger = store.denials
    const reopened = await Denials.open({ ledger })
    expect(reopened.denied(A)?.reason).toBe('second')
    const rm = await runDenyOp({ op: 'rm', target: A.toString(), by: 'carol', reason: 'counter-notice' }, { ledger, pins: { livePinsOf: async () => [] }, denials: reopened })
    expect((rm.removed as any).by).toBe('bob')
    expect(reopened.denied(A)).toBeUndefined()
    const ls = await runDenyOp({ op: 'ls', history: true }, { ledger, pins: { livePinsOf: async () => [] } })
    expect(ls.rules).toEqual([])
    expect((ls.history as any[]).map(e => [e.op, e.by, e.reason])).toEqual([['add', 'alice', 'first'], ['add', 'bob', 'second'], ['rm', 'carol', 'counter-notice']])
  })

  it('add names the live pins it stops serving, under any codec of the multihash', async () => {
    const pins = store.pins
    const deps = { ledger, pins, denials: await Denials.open({ ledger }) }
    const now = new Date()
    const pin = { requestid: 'r1', owner: '0xa', cid: CID.createV1(0x70, A.multihash).toString(), origins: [], meta: {}, status: 'pinned' as const, created: now.toISOString(), createdUs: now.getTime() * 1000, months: 1, pinnedUntil: new Date(now.getTime() + 86400_000).toISOString(), source: 'pin' as const, payment: { id: 'p', payer: '0xa', amount: '0', network: 'n', asset: 'a', method: 'operator-token' as const } }
    await pins.create(pin as any)
    const r = await runDenyOp({ op: 'add', target: A.toString(), reason: 'x', by: 'y' }, deps)
    expect(r.livePins).toEqual(['r1'])
  })

  it('refuses what it cannot deny, with a reason', () => {
    expect(() => operatorTarget('/ipns/example.com')).toThrow(/no IPNS/)
    expect(() => operatorTarget('!/ipfs/' + A.toString())).toThrow(/\.deny file/)
    expect(() => operatorTarget('bafkqaaa')).toThrow(/empty block/)
    expect(() => operatorTarget('nonsense')).toThrow(/not a CID/)
    expect(operatorTarget(`${A}/a%20b/`).key).toBe(operatorTarget(`/ipfs/${CID.createV1(0x70, A.multihash)}/a b`).key)
  })

  it('the serve policy refuses a denied CID on every channel, and says why', async () => {
    const denials = await Denials.open({ ledger })
    await runDenyOp({ op: 'add', target: A.toString(), reason: 'gone', by: 'x' }, { ledger, pins: { livePinsOf: async () => [] }, denials })
    const policy = new ServePolicy({ pins: { isPinnedBlock: () => true, hasLivePin: () => true }, scope: 'pinned', denied: (cid, path) => denials.denied(cid, path) })
    expect(policy.mayServe(A, 'bitswap')).toBe(false)
    expect(policy.mayServe(A, 'gateway')).toBe(false)
    expect(policy.mayServe(B, 'bitswap')).toBe(true)
    expect(policy.refusal(A)?.message).toMatch(/gone/)
    const status = withDenial({ requestid: 'r', status: 'pinned', created: '', pin: { cid: A.toString(), origins: [], meta: {} }, delegates: [], info: { status_details: 'pinned on this node' } }, (c) => policy.refusal(c))
    expect(status.status).toBe('pinned')
    expect(status.info.denied).toMatch(/gone/)
    expect(status.info.status_details).toBe('not served: denied by the operator of this service (gone); pinned on this node')
  })
})

describe('DenylistSources', () => {
  it('a path that does not exist is a configuration error', async () => {
    await expect(new DenylistSources([join(dir, 'nope.deny')], log).load()).rejects.toThrow(DenylistConfigError)
  })

  it('follows its files as they change: a line added, a line removed, a file replaced by rename, a broken rewrite, a file removed', async () => {
    const file = join(dir, 'list.deny')
    writeFileSync(file, `/ipfs/${A}\n`)
    let changes = 0
    // no periodic check within the test: what it sees, fs.watch reported
    const s = new DenylistSources([file], log, { onChange: () => { changes++ }, pollMs: 3_600_000 })
    await s.load()
    s.watch()
    closers.push(async () => { await s.close() })
    const denials = await Denials.open({ files: () => s.files() })
    expect(denials.denied(A)).toBeDefined()

    appendFileSync(file, `/ipfs/${B}\n`)
    await waitFor(() => denials.denied(B) != null ? true : undefined, 'the added line')
    writeFileSync(file, `/ipfs/${B}\n`)
    await waitFor(() => denials.denied(A) == null ? true : undefined, 'the removed line')
    expect(denials.denied(B)).toBeDefined()

    writeFileSync(join(dir, 'tmp'), `/ipfs/${C}\n`)
    renameSync(join(dir, 'tmp'), file)
    await waitFor(() => denials.denied(C) != null ? true : undefined, 'the file replaced by rename')

    writeFileSync(file, 'version: 9\n---\n')
    await waitFor(() => logged.some(l => l.includes('its previous version still applies')) ? true : undefined, 'the broken rewrite logged')
    expect(denials.denied(C)).toBeDefined()

    rmSync(file)
    await waitFor(() => denials.denied(C) == null ? true : undefined, 'the removed file')
    expect(logged.some(l => l.includes('denylist removed'))).toBe(true)
    expect(changes).toBeGreaterThanOrEqual(4)
  })

  it('logs each bad line with file:line, once per read', async () => {
    const file = join(dir, 'bad.deny')
    writeFileSync(file, `/ipfs/${A}\n/ipfs/broken\n`)
    await sources([file])
    const bad = logged.map(l => JSON.parse(l)).filter(l => l.msg === 'denylist line skipped')
    expect(bad).toEqual([expect.objectContaining({ level: 'warn', at: `${file}:2`, problem: expect.stringMatching(/not a CID/) })])
  })
})
