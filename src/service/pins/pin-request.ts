/**
 * The body of POST /pins and POST /pins/{requestid} (the spec's Pin object),
 * described once as a zod schema: the request is validated with it, and the
 * OpenAPI document's Pin, Origins and PinMeta schemas are derived from it
 * (src/http/openapi.ts, through API_SCHEMAS). `cid` required and parseable,
 * with a codec and hash this node can walk and verify (ipfs/codecs.ts;
 * identity roots are refused); `name` ≤ 255 characters; `origins` ≤ 20
 * unique multiaddrs; `meta` ≤ 1000 string → string entries. A null field is
 * an absent one. Anything else is an InvalidInputError that names the field
 * (the first problem found, in field order).
 */
import { multiaddr } from '@multiformats/multiaddr'
import { CID } from 'multiformats/cid'
import { z } from 'zod/v4'
import { InvalidInputError } from '../../kernel/errors.js'
import { unknownCodec, unknownHash } from '../../ipfs/codecs.js'
import { setOwn } from './own-property.js'

export interface PinRequest {
  cid: CID
  /** the CID as the client sent it (kept in PinStatus.pin.cid) */
  cidText: string
  name?: string
  origins: string[]
  meta: Record<string, string>
}

/** the index of an array element an issue is about */
const at = (iss: { path?: PropertyKey[] }): string => String(iss.path?.at(-1) ?? '')

export const Origins = z.array(z.string({ error: (iss) => `origins[${at(iss)}] must be a string` }).meta({ maxLength: 1024 }), { error: 'origins must be an array of multiaddr strings' })
  .max(20, 'origins may list at most 20 multiaddrs')
  .superRefine((list, ctx) => {
    for (const [i, o] of list.entries()) {
      try {
        if (o.length > 1024 || !o.startsWith('/')) throw new Error('shape')
        multiaddr(o)
      } catch {
        ctx.addIssue({ code: 'custom', message: `origins[${i}] "${o.slice(0, 100)}" is not a valid multiaddr` })
        return
      }
      if (list.indexOf(o) !== i) {
        ctx.addIssue({ code: 'custom', message: `origins[${i}] is listed twice` })
        return
      }
    }
  })
  .meta({
    description: 'Optional list of multiaddrs known to provide the data (dialled first); see Provider Hints in the Pinning Service API',
    uniqueItems: true,
    examples: [['/ip4/203.0.113.142/tcp/4001/p2p/12D3KooWSourcePeerId']]
  })

export const PinMeta = z.record(z.string(), z.string({ error: (iss) => `meta.${at(iss).slice(0, 100)} must be a string` }), { error: 'meta must be an object of string values' })
  .refine(m => Object.keys(m).length <= 1000, 'meta may have at most 1000 entries')
  .meta({
    description: 'Optional metadata for pin object (string values)',
    maxProperties: 1000,
    examples: [{ app_id: '99986338-1113-4706-8302-4420da6158aa' }]
  })

export const Pin = z.object({
  cid: z.string({ error: (iss) => iss.input == null ? 'cid is required' : 'cid must be a string' })
    .superRefine((text, ctx) => {
      const cidText = text.trim()
      let cid: CID
      try {
        if (cidText.length === 0 || cidText.length > 512) throw new Error('length')
        cid = CID.parse(cidText)
      } catch {
        ctx.addIssue({ code: 'custom', message: `cid "${cidText.slice(0, 100)}" is not a valid CID` })
        return
      }
      // the node's own table (ipfs/codecs.ts): a root it could not walk is refused before any payment
      const unsupported = unknownCodec(cid) ?? unknownHash(cid)
      if (unsupported != null) ctx.addIssue({ code: 'custom', message: `cid uses ${unsupported}` })
    })
    .meta({
      description: 'Content Identifier (CID) to be pinned recursively: codec dag-pb, raw, dag-cbor, dag-json or json; hash sha2-256 or sha2-512. Kept as sent.',
      maxLength: 512,
      examples: ['bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi']
    }),
  name: z.string({ error: 'name must be a string' })
    .refine(s => [...s].length <= 255, 'name must be at most 255 characters')
    .meta({ description: 'Optional name for pinned data; can be used for lookups later', maxLength: 255, examples: ['PreciousData.pdf'] })
    .optional(),
  origins: Origins.optional(),
  meta: PinMeta.optional()
}, { error: 'the body must be a JSON object: {"cid": "...", "name"?, "origins"?, "meta"?}' }).meta({ description: 'Pin object' })

export function parsePinRequest (body: unknown): PinRequest {
  return commonPin(body) ?? schemaPin(body)
}

/** the body through the schema: every shape, every error message (exported for the test that the hand check agrees with it) */
export function schemaPin (body: unknown): PinRequest {
  const parsed = Pin.safeParse(withoutNulls(body))
  if (!parsed.success) throw new InvalidInputError(parsed.error.issues[0]?.message ?? 'the body is not a valid Pin object')
  const b = parsed.data
  const cidText = b.cid.trim()
  // own properties only, whatever the keys (a "__proto__" key is data, not a prototype)
  const meta: Record<string, string> = {}
  for (const [k, v] of Object.entries((body as { meta?: Record<string, unknown> }).meta ?? {})) {
    // zod's record passes over a "__proto__" key: its value is checked here
    if (typeof v !== 'string') throw new InvalidInputError(`meta.${k.slice(0, 100)} must be a string`)
    setOwn(meta, k, v)
  }
  return { cid: CID.parse(cidText), cidText, ...(b.name != null ? { name: b.name } : {}), origins: b.origins ?? [], meta }
}

/**
 * The common body, `{"cid": "…"}` with perhaps a `name` (and null, absent or
 * empty `origins` and `meta`), checked by hand: zod's run and the CID's parse
 * were most of an unpaid POST /pins' own cost. The same PinRequest
 * the schema gives; anything else, and anything wrong, goes through the
 * schema (its messages). A CID is parsed once: CIDs are immutable, so the
 * requests naming the same text share one (its string forms cached with it).
 */
function commonPin (body: unknown): PinRequest | undefined {
  if (body == null || typeof body !== 'object' || Object.getPrototypeOf(body) !== Object.prototype) return undefined
  const b = body as Record<string, unknown>
  let keys = 0
  for (const k in b) {
    keys++
    if (k !== 'cid' && k !== 'name' && k !== 'origins' && k !== 'meta') return undefined
  }
  const text = b.cid
  const name = b.name
  const origins = b.origins
  const meta = b.meta
  if (typeof text !== 'string' || keys > 4) return undefined
  // at most 255 UTF-16 units is at most 255 characters; a longer name is counted by the schema
  if (name != null && (typeof name !== 'string' || name.length > 255)) return undefined
  if (origins != null && (!Array.isArray(origins) || origins.length > 0)) return undefined
  if (meta != null && (typeof meta !== 'object' || Object.getPrototypeOf(meta) !== Object.prototype || Object.keys(meta).length > 0)) return undefined
  const cidText = text.trim()
  const cid = pinnableCid(cidText)
  if (cid == null) return undefined
  return name != null ? { cid, cidText, name, origins: [], meta: {} } : { cid, cidText, origins: [], meta: {} }
}

/** CIDs parsed lately, by their text: undefined when not one pind pins (the schema then tells why) */
const parsedCids = new Map<string, CID | null>()
const MAX_PARSED_CIDS = 1000

function pinnableCid (text: string): CID | undefined {
  let cid = parsedCids.get(text)
  if (cid === undefined) {
    cid = null
    if (text.length > 0 && text.length <= 512) {
      try {
        const parsed = CID.parse(text)
        if (unknownCodec(parsed) == null && unknownHash(parsed) == null) cid = parsed
      } catch {}
    }
    if (parsedCids.size >= MAX_PARSED_CIDS) parsedCids.delete(parsedCids.keys().next().value as string)
    parsedCids.set(text, cid)
  }
  return cid ?? undefined
}

/** the body with its null fields left out (null means absent) */
function withoutNulls (body: unknown): unknown {
  if (body == null || typeof body !== 'object' || Array.isArray(body)) return body
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(body)) if (v !== null) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true })
  return out
}
