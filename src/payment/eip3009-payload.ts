/**
 * The `payload` of an exact-EVM x402 payment (PAYMENT-SIGNATURE): an EIP-3009
 * transferWithAuthorization and its signature, as a zod schema. gate.ts reads the payer and nonce
 * from it, checked with this schema before any verifier sees it; x402-shapes.ts builds the whole
 * header's schema around it (for the OpenAPI document and the tests).
 */
import { z } from 'zod/v4'
import { ADDRESS, HEX, matching } from '../kernel/api-shapes.js'

/** an unsigned integer as a string, at most 78 digits (2^256) */
const UINT = '^\\d{1,78}$'
const NONCE = '^0x[0-9a-fA-F]{64}$'

export const Eip3009Payload = z.object({
  signature: matching('EIP-712 signature of the authorization', HEX),
  authorization: z.object({
    from: matching('the payer', ADDRESS),
    to: matching('payTo', ADDRESS),
    value: matching('amount, atomic units', UINT),
    validAfter: matching('unix seconds', UINT),
    validBefore: matching('unix seconds', UINT),
    nonce: matching('32-byte nonce; payer:nonce identifies the payment', NONCE)
  })
}).meta({ description: 'an EIP-3009 transferWithAuthorization' })
