/**
 * The token signing keys: one file per key in the data dir's `keys/` folder
 * (mode 0700; file format in key-file.ts), or in the ledger several front ends
 * share (key-source.ts). The newest active key signs; every active key
 * verifies, so tokens survive a rotation until the old key is retired. `pind
 * keys` changes them from another process while a server runs (or another
 * front end does), so the server must notice without a restart.
 *
 * Algorithm: EdDSA over Ed25519. Deterministic signatures (no per-signature
 * nonce whose reuse or bias leaks the key, unlike ECDSA/ES256), small keys and
 * tokens, fast, and no curve or padding parameters to get wrong.
 *
 * Noticing changes: `refresh()` (called by TokenService before each issue and
 * verify) asks the source for its stamp at most once per `checkIntervalMs`
 * (default 1 s) and re-reads the keys when it changed (the folder's inode,
 * mtime and ctime; the ledger's version), or when the source cannot tell yet.
 * Keys that fail to load fail closed: refresh() keeps throwing until a reload
 * succeeds, rather than verifying with a possibly stale key set; while it
 * fails, every call checks again (single-flight), so a source that is back is
 * used at once.
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose'
import { z } from 'zod/v4'
import { text } from '../kernel/api-shapes.js'
import { KeyStoreError, UnknownKeyError } from './errors.js'
import type { KeyFile, KeyStatus } from './key-file.js'
import { folderKeySource, type KeySource } from './key-source.js'

export const KEY_ALG = 'EdDSA'

/**
 * What jwks() answers: a JWK Set (RFC 7517) of the active keys' public
 * halves. The keys are jose's exports, not parsed by us: test/unit/http/
 * openapi.test.ts checks a real store's set against this. OpenAPI: Jwks,
 * derived from this.
 */
export const Jwks = z.object({
  keys: z.array(z.object({
    kty: z.literal('OKP'),
    crv: z.literal('Ed25519'),
    x: text('public key, base64url'),
    kid: text('key id (the JWT header kid)'),
    alg: z.literal(KEY_ALG),
    use: z.literal('sig')
  }))
}).meta({ description: 'JWK Set (RFC 7517) of the token signing keys' })

/** Public facts about a key; no key material. */
export interface KeyInfo {
  kid: string
  alg: string
  created: string
  status: KeyStatus
  retiredAt?: string
}

export interface SigningKey {
  kid: string
  alg: string
  privateKey: CryptoKey
}

export interface KeyStoreOptions {
  /** how often refresh() may stat the folder; default 1000 ms */
  checkIntervalMs?: number
  /** wall clock for `created`/`retiredAt`; default `new Date()` */
  clock?: () => Date
}

interface LoadedKey {
  file: KeyFile
  publicKey: CryptoKey
  /** only for active keys */
  privateKey?: CryptoKey
}

export class KeyStore {
  private keys = new Map<string, LoadedKey>()
  private stamp: string | undefined
  private failure: Error | undefined
  private lastCheck = -Infinity
  private pendingCheck: Promise<void> | undefined
  private started = 0
  private applied = 0
  private readonly checkIntervalMs: number
  private readonly clock: () => Date

  /** where the keys are, for messages */
  readonly where: string

  private constructor (private readonly source: KeySource, opts: KeyStoreOptions) {
    this.where = source.where
    this.checkIntervalMs = opts.checkIntervalMs ?? 1000
    this.clock = opts.clock ?? (() => new Date())
  }

  /** Opens the keys (a folder: created 0700 if needed); creates a key if none is active. */
  static async open (source: KeySource | string, opts: KeyStoreOptions = {}): Promise<KeyStore> {
    const from = typeof source === 'string' ? folderKeySource(source) : source
    await from.open()
    const store = new KeyStore(from, opts)
    await store.reload()
    if (store.activeKeys().length === 0) await store.rotate()
    return store
  }

  /** All keys, oldest first. */
  list (): KeyInfo[] {
    return this.sorted().map(k => infoOf(k.file))
  }

  info (kid: string): KeyInfo | undefined {
    const k = this.keys.get(kid)
    return k === undefined ? undefined : infoOf(k.file)
  }

  /** The key that signs new tokens: the newest active one. */
  active (): SigningKey {
    const newest = this.activeKeys().at(-1)
    if (newest?.privateKey === undefined) {
      throw new KeyStoreError(`no active signing key in ${this.where}; run \`pind keys rotate\``)
    }
    return { kid: newest.file.kid, alg: newest.file.alg, privateKey: newest.privateKey }
  }

  /** The public key for `kid`, or undefined when it is unknown or retired. */
  verificationKey (kid: string): CryptoKey | undefined {
    const k = this.keys.get(kid)
    return k?.file.status === 'active' ? k.publicKey : undefined
  }

  /** Public keys of all non-retired keys, for /.well-known/jwks.json (shaped as Jwks). */
  jwks (): { keys: JWK[] } {
    return {
      keys: this.activeKeys().map(k => ({ ...k.file.publicJwk, kid: k.file.kid, alg: k.file.alg, use: 'sig' }))
    }
  }

  /** Creates a new key, which becomes the signing key. Older keys keep verifying until retired. */
  async rotate (): Promise<KeyInfo> {
    await this.reload()
    const { privateKey, publicKey } = await generateKeyPair(KEY_ALG, { extractable: true })
    const created = this.nextCreated()
    const file: KeyFile = {
      kid: `${created.slice(0, 10).replaceAll('-', '')}-${randomBytes(8).toString('hex')}`,
      alg: KEY_ALG,
      created,
      status: 'active',
      privateJwk: await exportJWK(privateKey),
      publicJwk: await exportJWK(publicKey)
    }
    await this.source.write(file)
    await this.reload()
    return infoOf(file)
  }

  /** Stops a key from verifying. The signing key cannot be retired; rotate first. */
  async retire (kid: string): Promise<KeyInfo> {
    await this.reload()
    const k = this.keys.get(kid)
    if (k === undefined) throw new UnknownKeyError(kid, this.where)
    if (k.file.status === 'retired') return infoOf(k.file)
    if (this.activeKeys().at(-1) === k) {
      throw new KeyStoreError(`key ${kid} is the current signing key; run \`pind keys rotate\` first, then retire it`)
    }
    const file: KeyFile = { ...k.file, status: 'retired', retiredAt: this.clock().toISOString() }
    await this.source.write(file)
    await this.reload()
    return infoOf(file)
  }

  /** Re-reads the folder now. */
  async reload (): Promise<void> {
    const generation = ++this.started
    try {
      const stamp = await this.source.stamp()
      const keys = await this.loadKeys()
      if (generation < this.applied) return // a reload that started later already landed
      this.applied = generation
      this.keys = keys
      this.stamp = stamp
      this.failure = undefined
    } catch (err) {
      if (generation >= this.applied) {
        this.applied = generation
        this.failure = err as Error
      }
      throw err
    } finally {
      this.lastCheck = performance.now()
    }
  }

  /** Re-reads the folder if it changed; checks at most once per checkIntervalMs. Cheap; call per request. */
  async refresh (): Promise<void> {
    if (this.pendingCheck !== undefined) return await this.pendingCheck
    // a failed check is not kept for the interval: a ledger that was away and is back (or a key file
    // fixed) is seen by the very next call, which keeps failing closed until a reload succeeds
    if (this.failure === undefined && performance.now() - this.lastCheck < this.checkIntervalMs) return
    this.lastCheck = performance.now()
    this.pendingCheck = this.check().finally(() => { this.pendingCheck = undefined })
    return await this.pendingCheck
  }

  private async check (): Promise<void> {
    let stamp: string | undefined
    try {
      stamp = await this.source.stamp()
    } catch (err) {
      this.failure = err as Error
      throw err
    }
    if (this.failure === undefined && stamp !== undefined && stamp === this.stamp) return
    await this.reload()
  }

  private async loadKeys (): Promise<Map<string, LoadedKey>> {
    const keys = new Map<string, LoadedKey>()
    for (const file of await this.source.load()) keys.set(file.kid, await importKeys(this.source.whereIs(file.kid), file))
    return keys
  }

  private sorted (): LoadedKey[] {
    return [...this.keys.values()].sort((a, b) =>
      a.file.created === b.file.created
        ? (a.file.kid < b.file.kid ? -1 : 1)
        : (Date.parse(a.file.created) - Date.parse(b.file.created)))
  }

  private activeKeys (): LoadedKey[] {
    return this.sorted().filter(k => k.file.status === 'active')
  }

  /** Now, but strictly after every existing key, so "newest" is never a tie. */
  private nextCreated (): string {
    const newest = this.sorted().at(-1)
    const floor = newest === undefined ? 0 : Date.parse(newest.file.created) + 1
    return new Date(Math.max(this.clock().getTime(), floor)).toISOString()
  }
}

function infoOf (f: KeyFile): KeyInfo {
  return {
    kid: f.kid,
    alg: f.alg,
    created: f.created,
    status: f.status,
    ...(f.retiredAt !== undefined ? { retiredAt: f.retiredAt } : {})
  }
}


async function importKeys (where: string, file: KeyFile): Promise<LoadedKey> {
  if (file.alg !== KEY_ALG) throw new KeyStoreError(`${where} uses alg ${file.alg}; this pind signs with ${KEY_ALG} only`)
  try {
    // the thumbprint covers only public members, so equal thumbprints mean the halves belong together
    if (await calculateJwkThumbprint(file.privateJwk) !== await calculateJwkThumbprint(file.publicJwk)) {
      throw new KeyStoreError(`${where}: its public key does not match its private key`)
    }
    const publicKey = await importJWK(file.publicJwk, KEY_ALG) as CryptoKey
    if (file.status !== 'active') return { file, publicKey }
    const privateKey = await importJWK(file.privateJwk, KEY_ALG) as CryptoKey
    return { file, publicKey, privateKey }
  } catch (err) {
    if (err instanceof KeyStoreError) throw err
    throw new KeyStoreError(`${where} holds an unusable ${KEY_ALG} key: ${(err as Error).message}`)
  }
}
