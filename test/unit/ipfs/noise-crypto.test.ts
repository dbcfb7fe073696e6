/**
 * pind's noise crypto (noise-crypto.ts: a KeyObject per session key) is
 * noise's default on the wire: what one seals the other opens, for frames in
 * one piece and in a list of pieces, large and small; a frame altered in
 * transit, or opened with another key, is refused; and a libp2p connection
 * between a node using it and one using the default carries bytes both ways.
 */
import { randomBytes } from 'node:crypto'
import type { Libp2p } from '@libp2p/interface'
import { noise } from '@libp2p/noise'
import { defaultCrypto } from '@libp2p/noise/crypto'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { createLibp2p } from 'libp2p'
import { Uint8ArrayList } from 'uint8arraylist'
import { afterAll, describe, expect, it } from 'vitest'
import { noiseCrypto } from '../../../src/ipfs/noise-crypto.js'

const bytesOf = (x: Uint8Array | Uint8ArrayList): Buffer => Buffer.from(x instanceof Uint8Array ? x : x.subarray())
const split = (b: Uint8Array): Uint8ArrayList => new Uint8ArrayList(b.subarray(0, 1000), b.subarray(1000, 5000), b.subarray(5000))

describe('pind\'s noise crypto', () => {
  it('seals and opens as noise\'s default does, in one piece or many, large frames and small', () => {
    const k = randomBytes(32)
    const nonce = randomBytes(12)
    const ad = randomBytes(32)
    for (const size of [100, 1199, 1200, 65519]) {
      const plain = randomBytes(size)
      for (const input of [plain, ...(size > 5000 ? [split(plain)] : [])]) {
        const ours = bytesOf(noiseCrypto.chaCha20Poly1305Encrypt(input, nonce, ad, k))
        const theirs = bytesOf(defaultCrypto.chaCha20Poly1305Encrypt(input, nonce, ad, k))
        expect(ours.equals(theirs), String(size)).toBe(true)
        for (const sealed of [ours, ...(size > 5000 ? [split(ours)] : [])]) {
          expect(bytesOf(noiseCrypto.chaCha20Poly1305Decrypt(sealed, nonce, ad, k)).equals(plain), String(size)).toBe(true)
        }
        expect(bytesOf(defaultCrypto.chaCha20Poly1305Decrypt(ours, nonce, ad, k)).equals(plain)).toBe(true)
      }
    }
  })

  it('refuses a frame altered in transit or sealed with another key', () => {
    const k = randomBytes(32)
    const nonce = randomBytes(12)
    const ad = new Uint8Array(0)
    const sealed = bytesOf(noiseCrypto.chaCha20Poly1305Encrypt(randomBytes(20_000), nonce, ad, k))
    const flipped = Buffer.from(sealed)
    flipped[777] = (flipped[777] as number) ^ 1
    expect(() => noiseCrypto.chaCha20Poly1305Decrypt(flipped, nonce, ad, k)).toThrow()
    expect(() => noiseCrypto.chaCha20Poly1305Decrypt(split(flipped), nonce, ad, k)).toThrow()
    expect(() => noiseCrypto.chaCha20Poly1305Decrypt(sealed, nonce, ad, randomBytes(32))).toThrow()
  })

  const nodes: Libp2p[] = []
  afterAll(async () => { for (const n of nodes) await n.stop() })

  it('talks to a node with the default crypto over a real connection', async () => {
    const make = async (crypto?: typeof noiseCrypto): Promise<Libp2p> => {
      const n = await createLibp2p({ addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] }, transports: [tcp()], connectionEncrypters: [noise(crypto != null ? { crypto } : {})], streamMuxers: [yamux()] })
      nodes.push(n)
      return n
    }
    const ours = await make(noiseCrypto)
    const theirs = await make()
    const payload = randomBytes(300_000)
    await theirs.handle('/pind-test/echo/1.0.0', (stream) => {
      void (async () => {
        const got = new Uint8ArrayList()
        for await (const c of stream) got.append(c)
        stream.send(got.subarray())
        await stream.close()
      })()
    })
    const conn = await ours.dial(theirs.getMultiaddrs()[0] as never)
    const s = await conn.newStream('/pind-test/echo/1.0.0')
    s.send(payload)
    await s.close()
    const back = new Uint8ArrayList()
    for await (const c of s) back.append(c)
    expect(Buffer.from(back.subarray()).equals(payload)).toBe(true)
  })
})
