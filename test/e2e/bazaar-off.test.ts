/**
 * `--bazaar false`: a private service keeps out of bazaar-aware facilitators' catalogues. Its
 * 402s (HTTP and MCP) carry the same terms without the bazaar extension, a payment against
 * them goes through as before, and the service's own discovery documents still describe it.
 * (With the default, every 402 carries the extension: test/e2e/discovery, test/e2e/mcp.)
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { call, mcpClient, paymentRequiredOf } from '../helpers/mcp-client.js'
import { chainArgs, payingFetch } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'

const CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

let chain: DevChain
let pind: PindProcess
let client: Client | undefined

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args: [...args, '--pin-probe-timeout', '0', '--bazaar', 'false'], env })
})

afterAll(async () => {
  await client?.close()
  await pind?.stop()
  await chain?.stop()
})

describe('--bazaar false', () => {
  it('answers every unpaid write with its terms and no bazaar extension', async () => {
    const form = new FormData()
    form.append('file', new Blob(['x']), 'x.txt')
    const answers = [
      await fetch(`${pind.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid: CID }) }),
      await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'x-upload-size': '1' }, body: form }),
      await fetch(`${pind.url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': '1048576' } })
    ]
    for (const res of answers) {
      expect(res.status, await res.clone().text()).toBe(402)
      const header = res.headers.get('payment-required') as string
      const pr = decodePaymentRequiredHeader(header)
      expect(pr.accepts[0]).toMatchObject({ scheme: 'exact', network: 'eip155:167000', payTo: chain.payTo, asset: chain.usdc })
      expect(pr.extensions?.bazaar).toBeUndefined()
      // the terms alone: a fifth of the header with the extension (~3,100 bytes)
      expect(header.length).toBeLessThan(1000)
    }
  })

  it('takes a payment against those terms', async () => {
    const pay = payingFetch(chain, chain.payers[0]!.privateKey)
    const made = await pay(`${pind.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid: CID, name: 'private' }) })
    expect(made.status, await made.clone().text()).toBe(202)
    expect(made.headers.get('payment-response')).toBeTruthy()
  })

  it('declares no MCP tool to the bazaar either', async () => {
    client = await mcpClient(pind.url)
    const r = await call(client, 'pin_cid', { cid: CID })
    expect(r.isError).toBe(true)
    const pr = paymentRequiredOf(r)
    expect(pr?.accepts[0]).toMatchObject({ scheme: 'exact', network: 'eip155:167000', payTo: chain.payTo })
    expect(pr?.resource.url).toBe(`${pind.url}/mcp`)
    expect(pr?.extensions?.bazaar).toBeUndefined()
  })

  it('still lists the paid resources to those who reach the service', async () => {
    const res = await fetch(`${pind.url}/.well-known/x402`)
    expect(res.status).toBe(200)
    expect(JSON.stringify(await res.json())).toContain(`${pind.url}/pins`)
  })
})
