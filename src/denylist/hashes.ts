/**
 * The hash functions a double-hashed denylist entry (`//<multihash>`) may
 * use, by multihash code: what node:crypto has, and blake3 (the spec's own
 * example) from @noble/hashes. A multihash naming any other function, or a
 * truncated digest, cannot be matched and is reported as a bad line.
 */
import { hash } from 'node:crypto'
import { blake3 } from '@noble/hashes/blake3.js'

export const SHA2_256 = 0x12

export interface DoubleHasher {
  name: string
  /** digest length in bytes */
  length: number
  /** the digest of the UTF-8 bytes of `input` */
  digest (input: string): Uint8Array
}

const utf8 = new TextEncoder()

const node = (name: string, algorithm: string, length: number): DoubleHasher => ({
  name,
  length,
  digest: (input) => hash(algorithm, input, 'buffer')
})

const HASHERS = new Map<number, DoubleHasher>([
  [0x11, node('sha1', 'sha1', 20)],
  [SHA2_256, node('sha2-256', 'sha256', 32)],
  [0x13, node('sha2-512', 'sha512', 64)],
  [0x14, node('sha3-512', 'sha3-512', 64)],
  [0x15, node('sha3-384', 'sha3-384', 48)],
  [0x16, node('sha3-256', 'sha3-256', 32)],
  [0x17, node('sha3-224', 'sha3-224', 28)],
  [0x1e, { name: 'blake3', length: 32, digest: (input) => blake3(utf8.encode(input)) }],
  [0xb240, node('blake2b-512', 'blake2b512', 64)],
  [0xb260, node('blake2s-256', 'blake2s256', 32)]
])

/** the multihash codes of the functions above */
export const SUPPORTED_HASHES: readonly number[] = [...HASHERS.keys()]

export function hasherFor (code: number): DoubleHasher | undefined {
  return HASHERS.get(code)
}
