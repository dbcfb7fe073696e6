/**
 * x402 over MCP (payment/mcp.ts): the `_meta` payment becomes the very
 * PAYMENT-SIGNATURE string the HTTP path gets, a challenge is re-addressed to
 * the MCP endpoint without touching its terms, and a tool's bazaar
 * declaration passes @x402/extensions' validators.
 */
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentRequired } from '@x402/core/types'
import { validateDiscoveryExtension, validateDiscoveryExtensionSpec, type DiscoveryExtension } from '@x402/extensions/bazaar'
import { describe, expect, it } from 'vitest'
import { McpPaidTool, mcpChallenge, paymentHeaderOf } from '../../../src/payment/mcp.js'

const payment = {
  x402Version: 2,
  accepted: { scheme: 'exact', network: 'eip155:167000', amount: '1000', asset: '0x07d83526730c7438048D55A4fc0b850e2aaB6f0b', payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C', maxTimeoutSeconds: 300, extra: { name: 'USD Coin', version: '2' } },
  payload: { signature: '0x12', authorization: { from: '0x857b06519E91e3A54538791bDbb0E22373e36b66', to: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C', value: '1000', validAfter: '0', validBefore: '1', nonce: `0x${'ab'.repeat(32)}` } }
}

const tool = new McpPaidTool({ name: 'pin_cid', description: 'Pin a CID', inputSchema: { type: 'object', properties: { cid: { type: 'string' } }, required: ['cid'] }, example: { cid: 'bafy' }, output: { example: { pin: {} } } })

describe('x402 over MCP', () => {
  it('turns _meta["x402/payment"] into the PAYMENT-SIGNATURE the HTTP path gets', () => {
    expect(paymentHeaderOf(undefined)).toBeUndefined()
    expect(paymentHeaderOf({ other: 1 })).toBeUndefined()
    const header = paymentHeaderOf({ 'x402/payment': payment }) as string
    expect(header).toBe(encodePaymentSignatureHeader(payment as any))
    expect(decodePaymentSignatureHeader(header)).toEqual(payment)
  })

  it('re-addresses a challenge to the endpoint and the tool, its terms untouched', () => {
    const pr: PaymentRequired = { x402Version: 2, error: 'pay', resource: { url: 'https://pin.example/pins', description: 'Pin bafy', mimeType: 'application/json' }, accepts: [payment.accepted as any], extensions: { bazaar: { info: { input: { type: 'http' } } }, other: { kept: true } } }
    const made = mcpChallenge(encodePaymentRequiredHeader(pr), 'https://pin.example/mcp', tool)
    expect(made.accepts).toEqual(pr.accepts)
    expect(made.resource).toEqual({ url: 'https://pin.example/mcp', description: 'Pin bafy', mimeType: 'application/json' })
    expect((made.extensions as any).other).toEqual({ kept: true })
    expect((made.extensions as any).bazaar.info.input).toMatchObject({ type: 'mcp', tool: 'pin_cid', toolName: 'pin_cid' })
    // the same header and tool: the same object (kept, as the gate keeps its challenges)
    expect(mcpChallenge(encodePaymentRequiredHeader(pr), 'https://pin.example/mcp', tool)).toBe(made)
  })

  it('declares a tool as the bazaar extension says (spec: tool; @x402/extensions: toolName)', () => {
    const bazaar = tool.extensions.bazaar as DiscoveryExtension
    expect(validateDiscoveryExtension(bazaar)).toEqual({ valid: true })
    expect(validateDiscoveryExtensionSpec(bazaar as unknown as Record<string, unknown>)).toEqual({ valid: true })
  })
})
