/**
 * The body of POST /pins and POST /pins/{requestid} (the spec's Pin object),
 * checked field by field: `cid` required and parseable, with a codec and hash
 * this node can walk and verify (ipfs/codecs.ts; identity roots are refused);
 * `name` ≤ 255 characters; `origins` ≤ 20 unique multiaddrs; `meta` ≤ 1000
 * string → string entries. Anything else is an InvalidInputError that names the field.
 */
import { multiaddr } from '@multiformats/multiaddr'
import { CID } from 'multiformats/cid'
import { InvalidInputError } from '../errors.js'
import { unknownCodec, unknownHash } from '../ipfs/codecs.js'
import { setOwn } from './own-property.js'


export interface PinRequest {
  cid: CID
  /** the CID as the client sent it (kept in PinStatus.pin.cid) */
  cidText: string
  name?: string
  origins: string[]
  meta: Record<string, string>
}

export function parsePinRequest (body: unknown): PinRequest {
  if (body == null || typeof body !== 'object' || Array.isArray(body)) throw new InvalidInputError('the body must be a JSON object: {"cid": "...", "name"?, "origins"?, "meta"?}')
  const b = body as Record<string, unknown>
  if (b.cid == null) throw new InvalidInputError('cid is required')
  if (typeof b.cid !== 'string') throw new InvalidInputError('cid must be a string')
  const cidText = b.cid.trim()
  let cid: CID
  try {
    if (cidText.length === 0 || cidText.length > 512) throw new Error('length')
    cid = CID.parse(cidText)
  } catch {
    throw new InvalidInputError(`cid "${cidText.slice(0, 100)}" is not a valid CID`)
  }
  // the node's own table (ipfs/codecs.ts): a root it could not walk is refused before any payment
  const unsupported = unknownCodec(cid) ?? unknownHash(cid)
  if (unsupported != null) throw new InvalidInputError(`cid uses ${unsupported}`)

  let name: string | undefined
  if (b.name != null) {
    if (typeof b.name !== 'string') throw new InvalidInputError('name must be a string')
    if ([...b.name].length > 255) throw new InvalidInputError('name must be at most 255 characters')
    name = b.name
  }

  const origins: string[] = []
  if (b.origins != null) {
    if (!Array.isArray(b.origins)) throw new InvalidInputError('origins must be an array of multiaddr strings')
    if (b.origins.length > 20) throw new InvalidInputError('origins may list at most 20 multiaddrs')
    for (const [i, o] of b.origins.entries()) {
      if (typeof o !== 'string') throw new InvalidInputError(`origins[${i}] must be a string`)
      try {
        if (o.length > 1024 || !o.startsWith('/')) throw new Error('shape')
        multiaddr(o)
      } catch {
        throw new InvalidInputError(`origins[${i}] "${o.slice(0, 100)}" is not a valid multiaddr`)
      }
      if (origins.includes(o)) throw new InvalidInputError(`origins[${i}] is listed twice`)
      origins.push(o)
    }
  }

  const meta: Record<string, string> = {}
  if (b.meta != null) {
    if (typeof b.meta !== 'object' || Array.isArray(b.meta)) throw new InvalidInputError('meta must be an object of string values')
    const entries = Object.entries(b.meta as Record<string, unknown>)
    if (entries.length > 1000) throw new InvalidInputError('meta may have at most 1000 entries')
    for (const [k, v] of entries) {
      if (typeof v !== 'string') throw new InvalidInputError(`meta.${k.slice(0, 100)} must be a string`)
      setOwn(meta, k, v)
    }
  }
  return { cid, cidText, ...(name != null ? { name } : {}), origins, meta }
}
