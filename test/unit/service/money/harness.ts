/**
 * The money path's use cases wired in-process the way `pind serve` wires them
 * (src/app/daemon.ts): the real core (openCore over a temp data dir), the real
 * PaymentGate with the embedded facilitator on the dev chain, the real size
 * probe, denials, tokens and settlement reconciliation. Payments are real x402
 * payloads signed by the dev chain's payers against the gate's own challenge.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest'
import { devChainClients, startDevChain, usdcBalance, type DevChain } from '../../../../scripts/devchain/index.mjs'
import { openCore, type Core } from '../../../../src/app/core.js'
import type { TokenService } from '../../../../src/auth/tokens.js'
import { layout } from '../../../../src/datadir/layout.js'
import { FsBackend } from '../../../../src/ipfs/fs-backend.js'
import { openS3Backend } from '../../../../src/ipfs/open-backend.js'
import type { S3Backend } from '../../../../src/ipfs/s3-backend.js'
import { PaymentRequiredError } from '../../../../src/kernel/errors.js'
import { createLogger, type Logger } from '../../../../src/kernel/log.js'
import { authorizationStateReader } from '../../../../src/payment/authorization-state.js'
import type { FacilitatorChoice } from '../../../../src/payment/facilitator.js'
import { PaymentGate } from '../../../../src/payment/gate.js'
import type { PriceSettings } from '../../../../src/payment/pricing.js'
import { runDenyOp } from '../../../../src/service/admin/deny-admin.js'
import type { OpenNoteDeps } from '../../../../src/service/payments/noted-retry.js'
import { PaymentOnce } from '../../../../src/service/payments/paid-once.js'
import { stagingInUse } from '../../../../src/service/payments/settlement-fulfil.js'
import type { PinCreateDeps } from '../../../../src/service/pins/pin-create.js'
import { parsePinQuery } from '../../../../src/service/pins/pin-query.js'
import { SizeProbe } from '../../../../src/service/pins/size-probe.js'
import { Denials } from '../../../../src/service/serving/denials.js'
import { ServePolicy } from '../../../../src/service/serving/serve-policy.js'
import { RetryLater } from '../../../../src/service/uploads/retry-later.js'
import { Slots } from '../../../../src/service/uploads/slots.js'
import type { FileReader, UploadDeps } from '../../../../src/service/uploads/upload.js'
import { BodyTooLargeError } from '../../../../src/kernel/errors.js'
import type { CID } from 'multiformats/cid'
import { signChallenge } from '../../../helpers/paying-client.js'
import { tempDir } from '../../../helpers/pind.js'
import { freePort } from '../../../helpers/ports.js'

export const NETWORK = 'eip155:167000'
/** 1 atomic unit per byte-month (1000 USDC per GB-month): prices of small files are far above the minimum, so a wrong size shows */
export const PRICES: PriceSettings = { rate: 1_000_000_000n, minimum: 1000n, maximum: 100_000_000n, maxMonths: 24 }
export const UPLOAD_MAX_BYTES = 4 * 1024 * 1024
export const PIN_MAX_BYTES = 4 * 1024 * 1024
export const PUBLIC_URL = 'http://127.0.0.1:9'

/** A real PaymentGate, built as daemon.ts builds it (embedded facilitator by default), started. */
export async function startGate (chain: DevChain, log: Logger, facilitator?: FacilitatorChoice): Promise<PaymentGate> {
  const gate = new PaymentGate({
    network: NETWORK,
    asset: chain.usdc,
    assetName: 'USD Coin',
    assetVersion: '2',
    payTo: chain.payTo,
    maxTimeoutSeconds: 900,
    prices: PRICES,
    rpcUrl: chain.rpcUrl,
    facilitator: facilitator ?? { kind: 'embedded', network: NETWORK, rpcUrl: chain.rpcUrl, settlerKey: chain.settlerKey, asset: chain.usdc },
    // --settle-timeout 8: a settler nonce taken but never sent (a settlement without gas) is filled
    // after 2 s rather than 15, so the next settlement does not wait long behind it
    settleDeadlineMs: 8_000
  }, log)
  await gate.start()
  expect(gate.isReady()).toBe(true)
  return gate
}

export interface Service {
  core: Core
  tokens: TokenService
  upload: UploadDeps
  pins: PinCreateDeps
  /** denies a CID as `pind deny add` does */
  deny: (cid: CID) => Promise<void>
  close: () => Promise<void>
}

/** what a test file of the paying client's use cases runs on */
export interface MoneyContext {
  chain: DevChain
  gate: PaymentGate
  log: Logger
  /** the service opened for this test */
  s: Service
  /** another service on the same chain and gate, closed after the test too */
  open: (opts?: { storage?: UploadDeps['storage'] }) => Promise<Service>
}

/**
 * One dev chain (two payers) and gate per test file, a fresh service per
 * test, every service a test opened closed after it: `use` is given the
 * context before each test.
 */
export function moneyHooks (use: (c: MoneyContext) => void): void {
  let chain: DevChain | undefined
  let gate: PaymentGate | undefined
  let log: Logger | undefined
  const opened: Service[] = []
  beforeAll(async () => {
    chain = await startDevChain({ payers: 2, pruneHistory: true })
    log = testLogger()
    gate = await startGate(chain, log)
  })
  afterAll(async () => {
    gate?.stop()
    await chain?.stop()
  })
  beforeEach(async () => {
    const c = chain as DevChain
    const g = gate as PaymentGate
    const l = log as Logger
    const open = async (opts: { storage?: UploadDeps['storage'] } = {}): Promise<Service> => {
      const svc = await openService(c, g, l, opts)
      opened.push(svc)
      return svc
    }
    use({ chain: c, gate: g, log: l, s: await open(), open })
  })
  afterEach(async () => {
    for (const o of opened.splice(0)) await o.close()
  })
}

/** A fresh data dir, its core opened as serve opens it, and the use cases' deps over it. */
export async function openService (chain: DevChain, gate: PaymentGate, log: Logger, opts: { storage?: UploadDeps['storage'] } = {}): Promise<Service> {
  const paths = layout(tempDir('pind-money-'))
  const blocks = new FsBackend(paths.blocks)
  await blocks.open()
  const core = await openCore(paths, { blocks })
  await core.staging.sweepLeftovers(stagingInUse(await core.ledger.notes.all()))
  const tokens = core.tokens(await core.keystore(), PUBLIC_URL, 3600)
  const denials = await Denials.open({ ledger: core.ledger.denials, files: () => [] })
  const policy = new ServePolicy({ pins: core.servedBlocks, scope: 'pinned', denied: (cid, path) => denials.denied(cid, path) })
  const refusal = (cid: CID): ReturnType<ServePolicy['refusal']> => policy.refusal(cid)
  const openNotes: OpenNoteDeps = {
    notes: core.ledger.notes,
    ledger: core.ledger.pins,
    fulfil: core.settlement.fulfil,
    log,
    chain: authorizationStateReader({ network: NETWORK, rpcUrl: chain.rpcUrl, asset: chain.usdc })
  }
  const once = new PaymentOnce()
  const storage = opts.storage ?? blocks
  const retry = new RetryLater(log)
  return {
    core,
    tokens,
    upload: {
      ledger: core.ledger.pins,
      staging: core.staging,
      lock: core.lock,
      gate,
      tokens,
      once,
      prices: PRICES,
      uploadMaxBytes: UPLOAD_MAX_BYTES,
      slots: new Slots(4),
      replaySlots: new Slots(8),
      publicUrl: PUBLIC_URL,
      network: NETWORK,
      asset: chain.usdc,
      log,
      refusal,
      storage,
      retry,
      notes: core.ledger.notes,
      openNotes
    },
    pins: {
      ledger: core.ledger.pins,
      gate,
      tokens,
      once,
      prices: PRICES,
      // probe timeout 0 (--pin-probe-timeout 0): only roots held here are read, nothing is dialled
      probe: new SizeProbe({ node: { blockstore: blocks.blockstore }, network: noNetwork, timeoutMs: 0, ttlMs: 900_000, isServable: (cid) => policy.mayServe(cid, 'gateway') }),
      pinMaxBytes: PIN_MAX_BYTES,
      retryWindowMs: 3600_000,
      publicUrl: PUBLIC_URL,
      network: NETWORK,
      asset: chain.usdc,
      delegates: () => [],
      log,
      refusal,
      storage,
      openNotes,
      leases: core.ledger.leases
    },
    deny: async (cid) => {
      await runDenyOp({ op: 'add', target: cid.toString(), reason: 'a test takedown', by: 'test' }, { ledger: core.ledger.denials, pins: core.ledger.pins, denials })
    },
    close: async () => {
      retry.stop()
      await core.close()
    }
  }
}

/** the size probe never dials here: a call is a test failure */
const noNetwork = {
  dial: async (): Promise<never> => { throw new Error('the size probe dialled out in a test without network') },
  retrieve: async (): Promise<never> => { throw new Error('the size probe fetched in a test without network') }
}

/** The use cases' logger: silent, unless MONEY_LOG is set (then its lines go to stderr, to follow a failing test). */
export function testLogger (): Logger {
  return createLogger({ level: 'info', write: (l) => { if (process.env.MONEY_LOG != null) process.stderr.write(l) } })
}

/**
 * What a client does with the 402 a use case answered: signs its
 * PAYMENT-REQUIRED terms (EIP-3009, a fresh nonce) with a payer's key.
 */
export async function payFor (chain: DevChain, payerKey: `0x${string}`, refusal: Promise<unknown>): Promise<string> {
  const err = await refusal.then(() => undefined, (e: unknown) => e)
  expect(err).toBeInstanceOf(PaymentRequiredError)
  const challenge = (err as PaymentRequiredError).challenge
  expect(challenge).toBeTypeOf('string')
  return await signChallenge(chain, payerKey, new Response(null, { status: 402, headers: { 'payment-required': challenge as string } }))
}

/**
 * The one file part of an upload, as the multipart reader hands it over:
 * chunks of its own (the importer frees them), the body limit and the
 * abort signal enforced. `onChunk` runs before each chunk is handed over.
 */
export function fileOf (bytes: Uint8Array, opts: { name?: string, chunk?: number, onChunk?: (i: number) => Promise<void> } = {}): FileReader {
  const size = opts.chunk ?? 64 * 1024
  return async (consume, limits) => {
    async function * chunks (): AsyncGenerator<Uint8Array> {
      let sent = 0
      for (let at = 0, i = 0; at < bytes.length; at += size, i++) {
        await opts.onChunk?.(i)
        limits.signal?.throwIfAborted()
        const c = bytes.slice(at, at + size)
        sent += c.length
        if (sent > limits.maxBodyBytes) throw new BodyTooLargeError(limits.maxBodyBytes)
        yield c
      }
    }
    return await consume({ name: opts.name ?? 'file.bin', bytes: chunks() })
  }
}

export const randomFile = (n: number): Uint8Array => new Uint8Array(randomBytes(n))

/** sets an account's ETH balance on anvil */
export async function setEth (chain: DevChain, address: `0x${string}`, wei: bigint): Promise<void> {
  const { publicClient } = devChainClients(chain)
  await publicClient.request({ method: 'anvil_setBalance' as never, params: [address, `0x${wei.toString(16)}`] as never })
}

/** every item of a ledger listing, whether it is handed out as an iterable or an async one */
export async function all<T> (items: Iterable<T> | AsyncIterable<T> | Promise<Iterable<T> | AsyncIterable<T>>): Promise<T[]> {
  const out: T[] = []
  for await (const x of await items) out.push(x)
  return out
}

/** files under a folder, at any depth */
export function filesUnder (dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter(e => e.isFile()).map(e => join(e.parentPath, e.name))
}

/** what a refused or failed request must leave as it was: the money on both sides, notes, staged and stored blocks */
export async function moneyState (chain: DevChain, s: Service, payer: `0x${string}`): Promise<Record<string, unknown>> {
  return {
    payTo: await usdcBalance(chain, chain.payTo),
    payer: await usdcBalance(chain, payer),
    notes: (await all(s.core.ledger.notes.all())).map(n => n.paymentId),
    staged: filesUnder(s.core.paths.staging),
    blocks: filesUnder(s.core.paths.blocks).length
  }
}

/** every pin an owner has in the ledger, whatever its status (GET /pins with all statuses) */
export async function pinsOf (s: Service, owner: string): Promise<string[]> {
  const { results } = await s.core.ledger.pins.list(owner.toLowerCase(), parsePinQuery(new URLSearchParams({ status: 'queued,pinning,pinned,failed', limit: '1000' })))
  return results.map(p => p.requestid)
}

/** an S3 block store whose endpoint refuses connections (a closed loopback port): down from its first check */
export async function deadS3 (log: Logger): Promise<S3Backend> {
  const dir = tempDir('pind-money-s3-')
  return await openS3Backend({ endpoint: `http://127.0.0.1:${await freePort()}`, bucket: 'gone', prefix: 'blocks/', region: 'us-east-1', forcePathStyle: true },
    { s3AccessKeyId: 'test', s3SecretAccessKey: 'test', s3CacheSize: 0, s3Timeout: 2 },
    { blocksDir: dir, cacheDir: dir, log })
}
