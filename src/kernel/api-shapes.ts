/**
 * What the zod schemas of the API's bodies share (service/ and payment/
 * describe theirs with these; src/http/openapi.ts derives the OpenAPI
 * document from them): the patterns of amounts and addresses, and a string
 * or count with its description (a `matching` string is validated against
 * its pattern, a `text` one only describes it).
 */
import { z } from 'zod/v4'

export const DIGITS = '^[0-9]+$'
export const USDC = '^[0-9]+\\.[0-9]{6}$'
export const ADDRESS = '^0x[0-9a-fA-F]{40}$'
export const LOWER_ADDRESS = '^0x[0-9a-f]{40}$'
/** 0x and hex digits (a signature) */
export const HEX = '^0x[0-9a-fA-F]+$'

/** a string, described (extra: JSON Schema keywords such as format, pattern, examples) */
export const text = (description: string, extra: Record<string, unknown> = {}) => z.string().meta({ description, ...extra })

/** a string that must match `pattern` (validated, and its JSON Schema's pattern), described */
export const matching = (description: string, pattern: string, extra: Record<string, unknown> = {}) => z.string().regex(new RegExp(pattern)).meta({ description, ...extra })

/** a whole number from 0 (or `min`), described */
export const count = (description: string, min = 0) => z.int().min(min).meta({ description })
