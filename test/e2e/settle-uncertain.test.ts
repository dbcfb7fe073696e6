/**
 * A settlement whose answer was lost. pind's RPC (a pass-through in front of
 * anvil) forwards the embedded facilitator's eth_sendRawTransaction to the
 * chain — the payment is made — and then drops the connection. pind cannot
 * tell how the settlement ended: the upload answers 503 (not 402: the payer
 * did nothing wrong), its settlement note and its blocks stay (staged on
 * disk; in the bucket with S3, vitest project s3), and reconciliation finds
 * the authorization used and records the pin from them, as after a crash. The payer's retry with the same payment gets that pin.
 * Likewise a pin by CID whose remote facilitator settled on chain and then
 * failed its answer (the settle call threw).
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid } from '../../scripts/peer/index.mjs'
import { blockstoreUnderTest } from '../helpers/backend.js'
import { startFacilitatorStandIn, type StandIn } from '../helpers/facilitator-standin.js'
import { recordingPayer, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { startRpcProxy, type RpcProxy } from '../helpers/rpc-proxy.js'

let chain: DevChain
let proxy: RpcProxy
let pind: PindProcess
let standIn: StandIn | undefined
let remote: PindProcess | undefined

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  proxy = await startRpcProxy(chain.rpcUrl)
  // reconciliation every second (it runs at the expiry sweep interval, at most every 5 minutes)
  const blocks = await blockstoreUnderTest()
  pind = await startPind({
    args: ['--rpc-url', proxy.url, '--asset', chain.usdc, '--pay-to', chain.payTo, '--expiry-sweep-interval', '1s', ...blocks.args],
    env: { PIND_SETTLER_KEY: chain.settlerKey, ...blocks.env }
  })
})

afterAll(async () => {
  await remote?.stop()
  await standIn?.close()
  await pind?.stop()
  await proxy?.close()
  await chain?.stop()
})

describe('a settlement that threw', () => {
  it('an upload whose settlement answer was lost keeps its note and its blocks, and reconciliation records the pin it paid for', async () => {
    const bytes = randomBytes(1_500_000)
    const before = await usdcBalance(chain, chain.payTo)
    const payer = recordingPayer(chain, chain.payers[0]!.privateKey)
    const sent = proxy.dropAfterSend()
    const r = await payer.pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes, 'lost.bin') })
    const body = await r.json() as any
    // the payer is not blamed, and is not told the payment was unused: it was used
    expect(r.status, JSON.stringify(body.error)).toBe(503)
    expect(body.error.details).not.toMatch(/was not used/)
    expect(await sent).toMatch(/^0x[0-9a-f]{64}$/)
    expect(await usdcBalance(chain, chain.payTo)).toBeGreaterThan(before)

    // reconciliation (the crash path) finds the authorization used and records the pin from the kept blocks
    const line = await waitFor(() => pind.stderr().split('\n').find(l => /the pin it bought is recorded now/.test(l)), 'the fulfilment warning', 30_000)
    const fulfilled = JSON.parse(line)
    expect(fulfilled.purpose).toBe(`upload:${fulfilled.cid}`)
    const served = Buffer.from(await (await fetch(`${pind.url}/ipfs/${fulfilled.cid}`)).arrayBuffer())
    expect(served.equals(bytes)).toBe(true)
    const notes = await runPind(['settlements', 'list', '--json', '--data-dir', pind.dataDir])
    expect(notes.code, notes.err).toBe(0)
    expect(JSON.parse(notes.out).notes).toEqual([])

    // the payer's retry with the same payment and file gets the pin it paid for
    const retry = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'payment-signature': payer.signature() }, body: uploadForm(bytes, 'lost.bin') })
    expect(retry.status).toBe(200)
    expect(await retry.json()).toMatchObject({ requestid: fulfilled.requestid, cid: fulfilled.cid, replayed: true })
  })

  it('a pin whose remote facilitator settled and then failed to answer is recorded by reconciliation', async () => {
    standIn = await startFacilitatorStandIn(chain, 0, { afterSettle: () => { throw new Error('the answer was lost') } })
    remote = await startPind({
      args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--facilitator-url', standIn.url, '--pin-probe-timeout', '0', '--expiry-sweep-interval', '1s']
    })
    const cid = rawCid(randomBytes(64)).toString()
    const payer = recordingPayer(chain, chain.payers[0]!.privateKey)
    const pin = { method: 'POST', headers: { 'content-type': 'application/json', 'x-pin-size': '1000' }, body: JSON.stringify({ cid }) }
    const r = await payer.pay(`${remote.url}/pins`, pin)
    const body = await r.json() as any
    expect(r.status, JSON.stringify(body.error)).toBe(503)
    expect(body.error.details).not.toMatch(/was not used/)
    const line = await waitFor(() => remote?.stderr().split('\n').find(l => /the pin it bought is recorded now/.test(l)), 'the fulfilment warning', 30_000)
    const fulfilled = JSON.parse(line)
    expect(fulfilled).toMatchObject({ cid, purpose: expect.stringContaining(cid) })
    const retry = await fetch(`${remote.url}/pins`, { ...pin, headers: { ...pin.headers, 'payment-signature': payer.signature() } })
    expect(retry.status).toBe(202)
    expect(await retry.json()).toMatchObject({ requestid: fulfilled.requestid, pin: { cid } })
  })
})
