/**
 * The codecs and hash functions pind pins, in one table: the Helia node is
 * built with exactly these (so every block of an accepted DAG can be decoded
 * and hash-checked), POST /pins refuses a root CID of anything else with a 400
 * before any payment, and the DAG walker refuses a link to anything else at
 * once (a pin that cannot be walked fails; retrying would not help).
 */
import { createHash } from 'node:crypto'
import * as dagCbor from '@ipld/dag-cbor'
import * as dagJson from '@ipld/dag-json'
import * as dagPb from '@ipld/dag-pb'
import type { CID } from 'multiformats/cid'
import type { BlockCodec } from 'multiformats/codecs/interface'
import * as json from 'multiformats/codecs/json'
import * as raw from 'multiformats/codecs/raw'
import type { MultihashHasher } from 'multiformats/hashes/interface'
import { identity } from 'multiformats/hashes/identity'
import { sha256, sha512 } from 'multiformats/hashes/sha2'

/** dag-pb, raw, dag-cbor, dag-json, json: what pind decodes and walks */
export const PIN_CODECS: ReadonlyArray<BlockCodec<number, unknown>> = [dagPb, raw, dagCbor, dagJson, json]

/** sha2-256, sha2-512: what pind hash-checks blocks with (identity CIDs carry their bytes and need none) */
export const PIN_HASHERS: readonly MultihashHasher[] = [sha256, sha512]

const CODECS = new Map(PIN_CODECS.map(c => [c.code, c]))
const CODEC_NAMES = new Map(PIN_CODECS.map(c => [c.code, c.name]))

/** the codec of this code, when pind pins it */
export function codecOf (code: number): BlockCodec<number, unknown> | undefined {
  return CODECS.get(code)
}
const HASH_NAMES = new Map(PIN_HASHERS.map(h => [h.code, h.name]))

/** multihash code → node:crypto's name for the same hash (PIN_HASHERS): for checks in one synchronous call, or streamed */
export const NODE_HASHES: ReadonlyMap<number, string> = new Map([[sha256.code, 'sha256'], [sha512.code, 'sha512']])

/** whether `bytes` hash to `cid` with one of PIN_HASHERS (false for any other hash function) */
export function hashesTo (cid: CID, bytes: Uint8Array): boolean {
  const algorithm = NODE_HASHES.get(cid.multihash.code)
  return algorithm != null && createHash(algorithm).update(bytes).digest().equals(cid.multihash.digest)
}

/** "codec 0x…, which …" when this node cannot decode blocks of `cid`'s codec */
export function unknownCodec (cid: CID): string | undefined {
  if (CODEC_NAMES.has(cid.code)) return undefined
  return `codec 0x${cid.code.toString(16)}, which this service cannot pin (supported: ${[...CODEC_NAMES.values()].join(', ')})`
}

/** "hash function 0x…; …" when this node cannot hash-check blocks of `cid` */
export function unknownHash (cid: CID): string | undefined {
  if (HASH_NAMES.has(cid.multihash.code)) return undefined
  return `hash function 0x${cid.multihash.code.toString(16)}; supported: ${[...HASH_NAMES.values()].join(', ')}`
}

/**
 * Why the DAG walker cannot go through a link to `cid`, or undefined when it
 * can. Identity CIDs carry their bytes: no hash to check.
 */
export function unwalkable (cid: CID): string | undefined {
  return unknownCodec(cid) ?? (cid.multihash.code === identity.code ? undefined : unknownHash(cid))
}
