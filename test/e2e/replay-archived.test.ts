/**
 * A payment re-sent after its pin was removed and moved to the archive
 * (PinLedger.archiveDue, issue 18: removed pins leave ledger.mdb at the next
 * archiver pass, their payments kept as marks): the real pind, the real
 * chain, the real ledger on disk. While the removed pin is in the ledger the
 * re-sent payment is answered as a replay; once it is archived, as a payment
 * used before (402), and nothing is settled a second time. The archiver's
 * pass is the one serve runs every 2 minutes, run here on the stopped
 * service's ledger (serve holds the data dir's lock), with serve's cutoffs.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { openLedgerEnv } from '../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../src/ledger/lmdb/pins.js'
import { archiveDelayMs } from '../../src/service/background/archiver.js'
import { chainArgs, signChallenge, uploadChallenge, uploadForm } from '../helpers/paying-client.js'
import { startPind, tempDir, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let pind: PindProcess | undefined
const dataDir = tempDir('pind-replay-archived-')

async function start (): Promise<PindProcess> {
  const { args, env } = chainArgs(chain)
  return await startPind({ dataDir, args, env: { ...env, PIND_PAYMENT_TIMEOUT: '900' } })
}

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  pind = await start()
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

describe('a payment re-sent after its pin was removed', () => {
  it('is a replay while the removed pin is in the ledger, and a used payment (402, nothing settled) once it is archived', async () => {
    const payer = chain.payers[0]!
    const bytes = randomBytes(4000)
    const header = await signChallenge(chain, payer.privateKey, await uploadChallenge((pind as PindProcess).url, bytes.length + 300))
    const send = async (): Promise<Response> => await fetch(`${(pind as PindProcess).url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'payment-signature': header } })
    const first = await send()
    expect(first.status).toBe(201)
    const pin = await first.json() as { requestid: string, price: { amount: string } }
    const token = first.headers.get('x-wallet-auth-token') as string
    const paid = await usdcBalance(chain, payer.address)
    expect((await fetch(`${(pind as PindProcess).url}/pins/${pin.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })).status).toBe(202)
    const replay = await send()
    expect(replay.status).toBe(200)
    expect((await replay.json() as { replayed: boolean, requestid: string })).toMatchObject({ replayed: true, requestid: pin.requestid })

    // serve's archiver pass, as src/service/background/archiver.ts runs it (serve stopped: it holds the ledger)
    expect(await (pind as PindProcess).stop()).toBe(0)
    const env = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
    try {
      const ledger = new PinLedger(env)
      const now = Date.now()
      expect(await ledger.archiveDue(new Date(now - archiveDelayMs(900)), undefined, undefined, undefined, new Date(now))).toBe(1)
      expect(ledger.get(pin.requestid)).toBeUndefined()
    } finally {
      await env.close()
    }
    pind = await start()

    const again = await send()
    expect(again.status).toBe(402)
    expect((await again.json() as { error: { reason: string, details: string } }).error).toMatchObject({ reason: 'PAYMENT_REQUIRED', details: expect.stringMatching(/already used/) })
    expect(await usdcBalance(chain, payer.address)).toBe(paid)
    // the same content with a new payment pins again
    const fresh = await signChallenge(chain, payer.privateKey, await uploadChallenge(pind.url, bytes.length + 300))
    const repin = await fetch(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'payment-signature': fresh } })
    expect(repin.status).toBe(201)
    expect(await usdcBalance(chain, payer.address)).toBe(paid - BigInt(pin.price.amount))
  })
})
