/**
 * The crash-safety path over MCP: a paid tool whose settlement has an
 * uncertain outcome (the remote facilitator stand-in settles on chain and
 * then loses its answer, or fails before settling) answers a tool error
 * SERVICE_UNAVAILABLE with a retry delay and leaves its settlement note, as
 * the HTTP route answers 503. The tool called again with the same payment
 * reconciles the note at once: the money moved → the pin it bought, charged
 * once; it did not → the work is done now. The settlement notes are the
 * ledger's (`pind settlements list`), the same ones an HTTP write leaves.
 */
import { randomBytes } from 'node:crypto'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload } from '@x402/core/types'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { identifyPayment } from '../../src/payment/gate.js'
import { startFacilitatorStandIn, type StandIn } from '../helpers/facilitator-standin.js'
import { call, callPaying, mcpClient } from '../helpers/mcp-client.js'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let standIn: StandIn
let pind: PindProcess
let client: Client
/** how the stand-in's next settle call fails: after settling on chain, before, or not at all */
let failSettle: 'after' | 'before' | undefined

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  standIn = await startFacilitatorStandIn(chain, 0, {
    beforeSettle: () => { if (failSettle === 'before') { failSettle = undefined; throw new Error('the facilitator went away before settling') } },
    afterSettle: () => { if (failSettle === 'after') { failSettle = undefined; throw new Error('the answer was lost') } }
  })
  pind = await startPind({ args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--facilitator-url', standIn.url] })
  client = await mcpClient(pind.url)
})

afterAll(async () => {
  await client?.close()
  await pind?.stop()
  await standIn?.close()
  await chain?.stop()
})

/** the open settlement notes of a payment */
async function openNotes (payment: PaymentPayload): Promise<unknown[]> {
  const r = await runPind(['settlements', 'list', '--json', '--data-dir', pind.dataDir])
  expect(r.code, r.err).toBe(0)
  const id = identifyPayment(encodePaymentSignatureHeader(payment))?.id
  return JSON.parse(r.out).notes.filter((n: { paymentId: string }) => n.paymentId === id)
}

describe('upload_content after an uncertain settlement', () => {
  it('settled on chain: SERVICE_UNAVAILABLE and a note; the same payment again gets the pin, charged once', async () => {
    const content = randomBytes(5000).toString('base64')
    const args = { content, encoding: 'base64', filename: 'lost.bin' }
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'after'
    const { payment, result } = await callPaying(client, chain, chain.payers[0]!.privateKey, 'upload_content', args)
    expect(result.isError).toBe(true)
    expect(result.content[0]?.text).toMatch(/^SERVICE_UNAVAILABLE: .*retry after \d+ s/)
    expect(result.structuredContent?.status).toBe(503)
    expect(await usdcBalance(chain, chain.payTo)).toBeGreaterThan(before)
    expect(await openNotes(payment)).toHaveLength(1)

    const retry = await call(client, 'upload_content', args, payment)
    expect(retry.isError).toBeFalsy()
    expect(retry.structuredContent).toMatchObject({ replayed: true, status: 'pinned', size: 5000 })
    const served = Buffer.from(await (await fetch(`${pind.url}/ipfs/${retry.structuredContent?.cid as string}`)).arrayBuffer())
    expect(served.toString('base64')).toBe(content)
    expect(await openNotes(payment)).toEqual([])
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(BigInt(retry.structuredContent?.price.amount))
  })

  it('never settled: the same payment again does the upload now, charged once', async () => {
    const args = { content: `never settled ${randomBytes(8).toString('hex')}` }
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'before'
    const { payment, result } = await callPaying(client, chain, chain.payers[0]!.privateKey, 'upload_content', args)
    expect(result.content[0]?.text).toMatch(/^SERVICE_UNAVAILABLE: /)
    expect(await usdcBalance(chain, chain.payTo)).toBe(before)

    const retry = await call(client, 'upload_content', args, payment)
    expect(retry.isError).toBeFalsy()
    expect(retry.structuredContent?.replayed).toBeUndefined()
    expect(retry._meta?.['x402/payment-response']).toMatchObject({ success: true })
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(BigInt(retry.structuredContent?.price.amount))
    expect(await openNotes(payment)).toEqual([])
  })
})
