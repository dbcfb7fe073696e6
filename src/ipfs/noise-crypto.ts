/**
 * Noise's crypto for libp2p connections: @libp2p/noise's default, except
 * that a frame's ChaCha20-Poly1305 cipher is made from a KeyObject kept per
 * session key instead of from the key's bytes: Node makes a new KeyObject from
 * raw bytes for every cipher, and noise makes one cipher per frame, a large
 * share of the decryption's CPU (docs/internals.md, noise-crypto.ts). The
 * bytes on the wire are the same; frames under 1,200 bytes keep the default's
 * WebAssembly path.
 */
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject } from 'node:crypto'
import type { ICryptoInterface } from '@libp2p/noise'
import { defaultCrypto } from '@libp2p/noise/crypto'

/** noise's list of byte pieces (uint8arraylist, which pind does not depend on itself) */
type List = Exclude<Parameters<ICryptoInterface['chaCha20Poly1305Decrypt']>[0], Uint8Array>
/** an empty list of the input's own class */
const emptyLike = (list: List): List => new (list.constructor as new () => List)()

const CHACHA_POLY1305 = 'chacha20-poly1305'
const TAG = 16
/** the size below which the default's WebAssembly implementation is faster (its own threshold) */
const SMALL = 1200

/** a session key's KeyObject (a noise CipherState keeps its key in one Uint8Array for the session) */
const keys = new WeakMap<Uint8Array, KeyObject>()
function keyOf (k: Uint8Array): KeyObject {
  let key = keys.get(k)
  if (key == null) {
    key = createSecretKey(k)
    keys.set(k, key)
  }
  return key
}

export const noiseCrypto: ICryptoInterface = {
  ...defaultCrypto,
  chaCha20Poly1305Encrypt (plaintext, nonce, ad, k) {
    if (plaintext.byteLength < SMALL) return defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k)
    const cipher = createCipheriv(CHACHA_POLY1305, keyOf(k), nonce, { authTagLength: TAG })
    cipher.setAAD(ad, { plaintextLength: plaintext.byteLength })
    if (plaintext instanceof Uint8Array) {
      const updated = cipher.update(plaintext)
      const final = cipher.final()
      const tag = cipher.getAuthTag()
      return Buffer.concat([updated, final, tag], updated.byteLength + final.byteLength + tag.byteLength)
    }
    const output = emptyLike(plaintext)
    for (const buf of plaintext) output.append(cipher.update(buf))
    const final = cipher.final()
    if (final.byteLength > 0) output.append(final)
    output.append(cipher.getAuthTag())
    return output
  },
  chaCha20Poly1305Decrypt (ciphertext, nonce, ad, k, dst) {
    if (ciphertext.byteLength < SMALL) return defaultCrypto.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst)
    const authTag = ciphertext.subarray(ciphertext.length - TAG)
    const decipher = createDecipheriv(CHACHA_POLY1305, keyOf(k), nonce, { authTagLength: TAG })
    const text = ciphertext instanceof Uint8Array ? ciphertext.subarray(0, ciphertext.length - TAG) : ciphertext.sublist(0, ciphertext.length - TAG)
    decipher.setAAD(ad, { plaintextLength: text.byteLength })
    decipher.setAuthTag(authTag)
    if (text instanceof Uint8Array) {
      const output = decipher.update(text)
      const final = decipher.final()
      return final.byteLength > 0 ? Buffer.concat([output, final], output.byteLength + final.byteLength) : output
    }
    const output = emptyLike(text)
    for (const buf of text) output.append(decipher.update(buf))
    const final = decipher.final()
    if (final.byteLength > 0) output.append(final)
    return output
  }
}
