/**
 * What the zod schemas of the API's bodies share (service/ and payment/
 * describe theirs with these; src/http/openapi.ts derives the OpenAPI
 * document from them): the patterns of amounts and addresses, and a string
 * or count with its description.
 */
import { z } from 'zod/v4'

export const DIGITS = '^[0-9]+$'
export const USDC = '^[0-9]+\\.[0-9]{6}$'
export const ADDRESS = '^0x[0-9a-fA-F]{40}$'
export const LOWER_ADDRESS = '^0x[0-9a-f]{40}$'

/** a string, described (extra: JSON Schema keywords such as format, pattern, examples) */
export const text = (description: string, extra: Record<string, unknown> = {}) => z.string().meta({ description, ...extra })

/** a whole number from 0 (or `min`), described */
export const count = (description: string, min = 0) => z.int().min(min).meta({ description })
