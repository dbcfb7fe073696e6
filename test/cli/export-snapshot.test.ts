/**
 * `pind export-ledger` through a running serve is one point in time: a ledger
 * of a few thousand paid pins (so that the export is megabytes long), an
 * export whose reader stops after its first bytes (serve waits for it, in the
 * middle of the pins), and meanwhile paid writes through the real x402 client
 * on a dev chain: upload tickets bought (a ticket and its payment in one
 * transaction) and a pin paid for (a pin and its payment). The export then
 * holds exactly the ledger as it was when it began: none of those records,
 * every payment with what it paid for and every paid pin or ticket with its
 * payment. The stopped data dir (no serve) is read the same way.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { isoMicros } from '../../src/ledger/clock.js'
import { openLedgerEnv } from '../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../src/ledger/lmdb/pins.js'
import type { PaymentRecord, PinRecord } from '../../src/ledger/records.js'
import { ticketPurpose, UploadTickets } from '../../src/ledger/lmdb/tickets.js'
import { chainArgs, payingFetch, recordingPayer } from '../helpers/paying-client.js'
import { BUNDLE, runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

const OWNER = '0x' + 'a1'.repeat(20)
const NET = 'eip155:167000'
const ASSET = '0x07d83526730c7438048D55A4fc0b850e2aaB6f0b'
const FAR = '2099-01-01T00:00:00.000Z'
/** pin lines of about 1 KB: megabytes, far more than serve, the socket, the CLI and its stdout pipe buffer together */
const PINS = 5000
const SEEDED_TICKETS = 3

let chain: DevChain
let pind: PindProcess

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0')

/** PINS paid pins (each with its payment record) and SEEDED_TICKETS unused tickets with theirs, written straight to the ledger. */
async function seed (dir: string): Promise<void> {
  const env = await openLedgerEnv(join(dir, 'ledger.mdb'))
  try {
    const ledger = new PinLedger(env)
    const tickets = new UploadTickets(env, ledger)
    const base = Date.parse('2025-01-01T00:00:00Z') * 1000
    for (let from = 0; from < PINS; from += 500) {
      const batch: Array<{ pin: PinRecord }> = []
      const payments: PaymentRecord[] = []
      for (let i = from; i < Math.min(PINS, from + 500); i++) {
        const cid = CID.create(1, raw.code, await sha256.digest(new TextEncoder().encode(`block ${i}`))).toString()
        const requestid = `${hex(i, 8)}-0000-4000-8000-000000000000`
        const createdUs = base + i * 1_000_000
        const id = `${OWNER}:0x${hex(i, 64)}`
        const at = isoMicros(createdUs)
        const tx = `0x${hex(i, 64)}`
        batch.push({
          pin: {
            requestid, owner: OWNER, cid, origins: [], meta: { app: 'export-snapshot' }, name: `file ${i}`, status: 'pinned', statusDetails: 'pinned: 1 block, 20 bytes',
            created: at, createdUs, months: 1, pinnedUntil: FAR, dagSize: 20, source: 'pin', maxBytes: 1_000_000,
            payment: { id, payer: OWNER, amount: '1500', network: NET, asset: ASSET, tx, settledAt: at, method: 'x402' }
          }
        })
        payments.push({ id, requestid, purpose: `pin:${cid}`, payer: OWNER, amount: '1500', network: NET, tx, at, proof: `sha256:${requestid}` })
      }
      await ledger.importBatch(batch, payments)
    }
    for (let i = 0; i < SEEDED_TICKETS; i++) {
      const id = `0ccccccc-0000-4000-8000-${hex(i, 12)}`
      const paymentId = `${OWNER}:0x${'c'.repeat(60)}${hex(i, 4)}`
      const at = '2025-09-01T10:00:00.000Z'
      await tickets.record(
        { id, payer: OWNER, bytes: 1000, months: 1, amount: '1500', paymentId, network: NET, asset: ASSET, createdAt: at, expiresAt: FAR },
        { id: paymentId, requestid: id, purpose: ticketPurpose(id), payer: OWNER, amount: '1500', network: NET, at, proof: `sha256:${id}` }
      )
    }
  } finally {
    await env.close()
  }
}

type Line = Record<string, any>
const parse = (text: string): Line[] => text.trim().split('\n').map(l => JSON.parse(l) as Line)

/**
 * Every payment line has what it paid for (its pin, or its ticket) and every
 * paid pin and ticket its payment line; the end line counts what is there.
 */
function expectConsistent (lines: Line[]): { pins: Set<string>, payments: Set<string>, tickets: Set<string> } {
  const of = (type: string): Line[] => lines.filter(l => l.type === type)
  const pins = new Set(of('pin').map(l => l.requestid as string))
  const payments = new Set(of('payment').map(l => l.payment_id as string))
  const tickets = new Set(of('ticket').map(l => l.ticket_id as string))
  for (const p of of('payment')) {
    const purpose = p.purpose as string
    if (purpose.startsWith('ticket:')) expect(tickets.has(p.requestid), `payment ${p.payment_id as string} for ticket ${p.requestid as string}, which the export lacks`).toBe(true)
    else expect(pins.has(p.requestid), `payment ${p.payment_id as string} for pin ${p.requestid as string}, which the export lacks`).toBe(true)
  }
  for (const p of of('pin')) {
    if (p.payment_method === 'x402') expect(payments.has(p.payment_id), `pin ${p.requestid as string} without its payment ${p.payment_id as string}`).toBe(true)
  }
  for (const t of of('ticket')) expect(payments.has(t.payment_id), `ticket ${t.ticket_id as string} without its payment ${t.payment_id as string}`).toBe(true)
  expect(lines.at(-1)).toEqual({ type: 'end', pins: pins.size, payments: payments.size, tickets: tickets.size })
  return { pins, payments, tickets }
}

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  const dataDir = tempDir()
  await seed(dataDir)
  const c = chainArgs(chain)
  pind = await startPind({ dataDir, args: c.args, env: c.env })
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

describe('export-ledger snapshot', () => {
  it('an export through serve is the ledger at the instant it began, whatever is paid for while its reader is slow', async () => {
    // the export's reader takes its first bytes, then stops reading: serve waits for it in the middle of the pins
    const p = spawn(process.execPath, [BUNDLE, 'export-ledger', '--data-dir', pind.dataDir], { env: { ...process.env, PIND_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] })
    const out: Buffer[] = []
    let err = ''
    let exited: number | null | undefined
    const exit = new Promise<number | null>(resolve => p.on('exit', (code) => { exited = code; resolve(code) }))
    p.stderr.on('data', (b: Buffer) => { err += b.toString() })
    p.stdout.on('data', (b: Buffer) => {
      out.push(b)
      if (out.length === 1) p.stdout.pause()
    })
    try {
      await waitFor(() => out.length > 0 ? true : undefined, 'the export\'s first bytes')
      expect(out[0]?.toString().startsWith('{"type":"header"')).toBe(true)

      // meanwhile: two upload tickets bought, and a pin paid for (each written with its payment in one transaction)
      const bought: string[] = []
      for (const payer of [0, 1]) {
        const { pay } = recordingPayer(chain, chain.payers[payer]!.privateKey)
        const r = await pay(`${pind.url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': '1000', 'x-pin-duration-months': '1' } })
        const body = await r.json() as any
        expect(r.status, JSON.stringify(body)).toBe(201)
        bought.push(body.ticket as string)
      }
      const cid = CID.create(1, raw.code, await sha256.digest(new TextEncoder().encode('paid during the export'))).toString()
      const pinned = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/pins`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-pin-size': '1000' }, body: JSON.stringify({ cid })
      })
      const pinBody = await pinned.json() as any
      expect(pinned.status, JSON.stringify(pinBody)).toBe(202)
      const paidPin = pinBody.requestid as string
      // the export has not got to its end meanwhile
      expect(exited).toBeUndefined()

      p.stdout.resume()
      expect(await exit, err).toBe(0)
      const lines = parse(Buffer.concat(out).toString())
      const { pins, payments, tickets } = expectConsistent(lines)
      // exactly what was there when it began
      expect(pins.size).toBe(PINS)
      expect(payments.size).toBe(PINS + SEEDED_TICKETS)
      expect(tickets.size).toBe(SEEDED_TICKETS)
      for (const t of bought) expect(tickets.has(t), `ticket ${t} bought during the export`).toBe(false)
      expect(pins.has(paidPin), `pin ${paidPin} paid for during the export`).toBe(false)

      // the writes are in the ledger: the next export has them, consistent too
      const after = await runPind(['export-ledger', '--data-dir', pind.dataDir])
      expect(after.code, after.err).toBe(0)
      const now = expectConsistent(parse(after.out))
      expect(now.pins.size).toBe(PINS + 1)
      expect(now.payments.size).toBe(PINS + SEEDED_TICKETS + 3)
      expect(now.tickets.size).toBe(SEEDED_TICKETS + 2)
      expect(now.pins.has(paidPin)).toBe(true)
      for (const t of bought) expect(now.tickets.has(t)).toBe(true)
    } finally {
      if (exited === undefined) {
        p.kill('SIGKILL')
        await exit
      }
    }
  })
})
