/**
 * exportLedger reads one snapshot of the ledger (the path of an export from
 * a stopped data dir, and the one serve runs behind its admin socket): on a
 * real LMDB ledger, writes that land while the export is read — between its
 * chunks — change nothing in it: it is byte for byte the export taken before
 * them. The snapshot is taken at the first chunk and released when the export
 * ends, is abandoned, or fails.
 */
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Ledger } from '../../../src/ledger/ledger.js'
import { openLmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import { ticketPurpose, type UploadTicket } from '../../../src/ledger/tickets.js'
import { exportLedger, parseExportOptions, type ExportRequest } from '../../../src/service/admin/ledger-export.js'
import { recordTicket } from '../../../src/service/payments/settlement-fulfil.js'
import { textOf } from '../../helpers/ledger.js'
import { tempDir } from '../../helpers/pind.js'
import { OWNER, paidPin } from '../../helpers/records.js'

const opened: Array<{ dir: string, ledger: Ledger }> = []
afterEach(async () => {
  for (const { dir, ledger } of opened.splice(0)) {
    await ledger.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

async function openLedger (): Promise<Ledger> {
  const dir = tempDir('pind-export-snapshot-')
  const ledger = await openLmdbLedger(join(dir, 'ledger.mdb'), { graceMs: () => 0 })
  opened.push({ dir, ledger })
  return ledger
}

const NOW = new Date('2026-11-24T12:00:00.000Z')
const FAR = '2099-01-01T00:00:00.000Z'

const cidOf = async (s: string): Promise<string> => CID.create(1, raw.code, await sha256.digest(new TextEncoder().encode(s))).toString()
const uuid = (n: number, tail = 0): string => `${n.toString(16).padStart(8, '0')}-0000-4000-8000-${tail.toString(16).padStart(12, '0')}`

async function buyTicket (ledger: Ledger, n: number): Promise<UploadTicket> {
  const id = uuid(n, 0xcc)
  const paymentId = `${OWNER}:0x${n.toString(16).padStart(64, 'c')}`
  const ticket: UploadTicket = { id, payer: OWNER, bytes: 1000, months: 1, amount: '1500', paymentId, network: 'eip155:84532', asset: '0x0', createdAt: NOW.toISOString(), expiresAt: FAR }
  await recordTicket(ledger, ticket, { id: paymentId, requestid: id, purpose: ticketPurpose(id), payer: OWNER, amount: '1500', network: 'eip155:84532', at: NOW.toISOString(), proof: `sha256:${id}` })
  return ticket
}

async function seed (t: Ledger): Promise<void> {
  for (let i = 1; i <= 40; i++) {
    const cid = await cidOf(`seeded ${i}`)
    const { pin, payment } = paidPin(uuid(i), cid)
    await t.pins.create(pin, payment, [cid])
  }
  await buyTicket(t, 1)
  await buyTicket(t, 2)
}

const REQUESTS: ExportRequest[] = [
  { withBlocks: true },
  { format: 'csv', records: 'payments', status: 'pinned' },
  { format: 'csv', records: 'tickets' },
  { status: 'pinned,removed' }
]

describe('exportLedger: one snapshot', () => {
  for (const request of REQUESTS) {
    it(`writes between its chunks change nothing in it (${JSON.stringify(request)})`, async () => {
      const t = await openLedger()
      await seed(t)
      const opts = parseExportOptions(request)
      const before = await textOf(exportLedger(t, opts, NOW).chunks)

      // one line per chunk: the writes land between the first lines and the rest
      const run = exportLedger(t, opts, NOW, 1)
      const out: string[] = []
      let n = 0
      for await (const chunk of run.chunks) {
        out.push(chunk)
        if (++n !== 2) continue
        // a pin paid for, a ticket bought, a ticket used by an upload (its pin made), a pin unpinned, a pin renewed with a new payment
        const cid = await cidOf('paid during the export')
        const paid = paidPin(uuid(100), cid)
        await t.pins.create(paid.pin, paid.payment, [cid])
        await buyTicket(t, 3)
        const upload = paidPin(uuid(101), await cidOf('uploaded with a ticket'))
        await t.transaction(async (tx) => {
          await tx.claimTicket(uuid(1, 0xcc), OWNER, upload.pin.requestid, NOW)
          await tx.createPin(upload.pin, undefined, [upload.pin.cid])
        })
        await t.pins.remove(uuid(40), 'unpinned', NOW)
        const renewal = paidPin(uuid(39), cid, { purpose: `renew:${uuid(39)}` })
        await t.pins.renew(uuid(39), 2, renewal.payment, () => new Date(FAR))
      }
      expect(n).toBeGreaterThan(2)
      expect(out.join('')).toBe(before)
      // the writes are there for the next export
      expect(await textOf(exportLedger(t, opts, NOW).chunks)).not.toBe(before)
    })
  }

  it('takes the snapshot at the first chunk and releases it when the export ends, is left early or its reader fails', async () => {
    const t = await openLedger()
    await seed(t)
    const { taken, released } = countSnapshots(t)
    const opts = parseExportOptions({})
    const source = t

    const unread = exportLedger(source, opts, NOW, 1)
    expect(taken()).toBe(0)
    void unread

    let chunks = 0
    for await (const _ of exportLedger(source, opts, NOW, 1).chunks) chunks++
    expect(chunks).toBeGreaterThan(40)
    expect([taken(), released()]).toEqual([1, 1])

    for await (const chunk of exportLedger(source, opts, NOW, 1).chunks) {
      expect(taken() - released()).toBe(1)
      if (chunk.includes('"type":"pin"')) break
    }
    expect([taken(), released()]).toEqual([2, 2])

    await expect((async () => {
      for await (const chunk of exportLedger(source, opts, NOW, 1).chunks) {
        if (chunk.includes('"type":"payment"')) throw new Error('the reader failed')
      }
    })()).rejects.toThrow('the reader failed')
    expect([taken(), released()]).toEqual([3, 3])
  })
})

/** counts the snapshots the ledger hands out, and their releases (the real ones: only counted) */
function countSnapshots (ledger: Ledger): { taken: () => number, released: () => number } {
  let taken = 0
  let released = 0
  const snapshot = ledger.snapshot.bind(ledger)
  ledger.snapshot = async () => {
    const s = await snapshot()
    taken++
    const release = s.release.bind(s)
    s.release = async () => { released++; await release() }
    return s
  }
  return { taken: () => taken, released: () => released }
}
