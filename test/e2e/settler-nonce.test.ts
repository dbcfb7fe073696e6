/**
 * The embedded settler recovers from a stuck nonce, on a real anvil with the
 * EIP-3009 token and real paid uploads (@x402/fetch), mining by hand:
 *   - a settlement transaction that sits in the pool unmined is replaced
 *     (same nonce and calldata, higher fees) while the original is there too;
 *     exactly one transfer happens and the settlement answers with the mined
 *     replacement's hash;
 *   - a settlement transaction dropped from the pool, with later settlements
 *     queued behind its nonce: it is re-broadcast, and every paid upload
 *     completes (201), each charged once, with no restart.
 * --settle-timeout 12 makes the settler re-send a nonce stuck for 3 s (a
 * quarter of it); before the fix every one of these settlements timed out (503).
 */
import { randomBytes } from 'node:crypto'
import { decodePaymentResponseHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'
import { startRpcProxy } from '../helpers/rpc-proxy.js'

let chain: DevChain
let pind: PindProcess
let metricsPort = 0

async function rpc<T = any> (method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(chain.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
  const body = await res.json() as { result?: T, error?: { message: string } }
  if (body.error != null) throw new Error(`${method}: ${body.error.message}`)
  return body.result as T
}

/** the settler's transactions in anvil's pool (pending and queued), by nonce */
async function settlerPool (): Promise<Array<{ nonce: number, hash: string }>> {
  const content = await rpc<Record<string, Record<string, Record<string, { nonce: string, hash: string }>>>>('txpool_content')
  const out: Array<{ nonce: number, hash: string }> = []
  for (const group of Object.values(content)) {
    for (const [from, txs] of Object.entries(group)) {
      if (from.toLowerCase() !== chain.settlerAddress.toLowerCase()) continue
      for (const tx of Object.values(txs)) out.push({ nonce: Number(tx.nonce), hash: tx.hash })
    }
  }
  return out.sort((a, b) => a.nonce - b.nonce)
}

const minedNonce = async (): Promise<number> => Number(await rpc<string>('eth_getTransactionCount', [chain.settlerAddress, 'latest']))

async function recoveries (port = metricsPort): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  return Number(/^pind_settler_nonce_recoveries_total (\d+)$/m.exec(text)?.[1] ?? 0)
}

/** the last warn line of pind's whose message matches */
function logged (msg: RegExp, p = pind): Record<string, unknown> | undefined {
  return p.stderr().split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as Record<string, unknown>).filter(l => msg.test(String(l.msg))).at(-1)
}

/** a paid upload of fresh bytes; resolves with its status, price and settlement transaction */
async function paidUpload (url = pind.url): Promise<{ status: number, price: bigint, tx: string, body: any }> {
  const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${url}/upload`, { method: 'POST', body: uploadForm(randomBytes(2000)) })
  const body = await r.json() as any
  const header = r.headers.get('payment-response')
  return { status: r.status, price: BigInt(body.price?.amount ?? 0), tx: header != null ? decodePaymentResponseHeader(header).transaction : '', body }
}

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  metricsPort = await freePort()
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args: [...args, '--settle-timeout', '12', '--metrics-listen', `127.0.0.1:${metricsPort}`], env })
  // blocks are mined by hand from here on
  await rpc('evm_setAutomine', [false])
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

describe('a stuck settlement nonce', () => {
  it('a transaction wedged in the pool is replaced (same nonce, higher fees); exactly one transfer happens', async () => {
    const payToBefore = await usdcBalance(chain, chain.payTo)
    const nonce = await minedNonce()
    const counted = await recoveries()
    const upload = paidUpload()
    const original = await waitFor(async () => (await settlerPool())[0], 'the settlement transaction in the pool', 20_000)
    expect(original.nonce).toBe(nonce)
    const originalRaw = await rpc<string>('eth_getRawTransactionByHash', [original.hash])
    // nothing is mined: the settler replaces its transaction
    await waitFor(async () => (await recoveries()) > counted ? true : undefined, 'a replacement', 20_000)
    const pool = await settlerPool()
    expect(pool.map(t => t.nonce)).toEqual([nonce])
    const replacement = pool[0]!.hash
    expect(replacement).not.toBe(original.hash)
    // the original reaches the pool again beside its replacement (refused or kept: only one can be mined)
    await rpc('eth_sendRawTransaction', [originalRaw]).catch(() => {})
    await rpc('evm_mine')
    await rpc('evm_mine')
    const r = await upload
    expect(r.status, JSON.stringify(r.body.error)).toBe(201)
    // exactly one transfer: the nonce moved by one, the money by the price, and the mined one is the answer
    expect(await minedNonce()).toBe(nonce + 1)
    expect(await usdcBalance(chain, chain.payTo)).toBe(payToBefore + r.price)
    expect(r.tx).toBe(replacement)
    expect((await rpc('eth_getTransactionReceipt', [replacement])).status).toBe('0x1')
    expect(await rpc('eth_getTransactionReceipt', [original.hash])).toBeNull()
    expect(logged(/settlement transaction replaced/)).toMatchObject({ level: 'warn', settler: chain.settlerAddress, nonce, tx: replacement })
  })

  it('a transaction dropped from the pool, later settlements queued behind it: re-broadcast, every paid upload completes, each charged once', async () => {
    const payToBefore = await usdcBalance(chain, chain.payTo)
    const payerBefore = await usdcBalance(chain, chain.payers[0]!.address)
    const nonce = await minedNonce()
    const counted = await recoveries()
    const first = paidUpload()
    const sent = await waitFor(async () => (await settlerPool())[0], 'the first settlement transaction in the pool', 20_000)
    expect(sent.nonce).toBe(nonce)
    // the first settlement transaction is lost (an RPC restart, an eviction)
    await rpc('anvil_dropAllTransactions')
    expect(await settlerPool()).toEqual([])
    // blocks come every second; the next settlements queue behind the missing nonce
    await rpc('evm_setIntervalMining', [1])
    const later = [paidUpload(), paidUpload()]
    const results = await Promise.all([first, ...later])
    for (const r of results) expect(r.status, JSON.stringify(r.body.error)).toBe(201)
    expect(await recoveries()).toBeGreaterThan(counted)
    // each settled once: three transactions mined, three distinct, and the money moved by exactly the prices
    const total = results.reduce((sum, r) => sum + r.price, 0n)
    expect(total).toBeGreaterThan(0n)
    expect(new Set(results.map(r => r.tx)).size).toBe(3)
    for (const r of results) expect((await rpc('eth_getTransactionReceipt', [r.tx])).status).toBe('0x1')
    expect(await minedNonce()).toBe(nonce + 3)
    expect(await usdcBalance(chain, chain.payTo)).toBe(payToBefore + total)
    expect(await usdcBalance(chain, chain.payers[0]!.address)).toBe(payerBefore - total)
    expect(logged(/settlement transaction re-broadcast/)).toMatchObject({ level: 'warn', nonce, inPool: false })
    // never the key
    expect(pind.stderr().toLowerCase()).not.toContain(chain.settlerKey.slice(2).toLowerCase())
  })

  /** a second pind whose RPC goes through a proxy that can cut its sends, with its metrics on `port` */
  async function pindBehindProxy (): Promise<{ proxy: Awaited<ReturnType<typeof startRpcProxy>>, port: number, other: PindProcess }> {
    const proxy = await startRpcProxy(chain.rpcUrl)
    const port = await freePort()
    const { env } = chainArgs(chain)
    const other = await startPind({ args: ['--rpc-url', proxy.url, '--asset', chain.usdc, '--pay-to', chain.payTo, '--settle-timeout', '12', '--metrics-listen', `127.0.0.1:${port}`], env })
    return { proxy, port, other }
  }

  it('a nonce taken but never sent (the send was cut) does not hold up the next settlements', async () => {
    await rpc('evm_setIntervalMining', [0])
    await rpc('evm_setAutomine', [true])
    const { proxy, port, other } = await pindBehindProxy()
    try {
      const payToBefore = await usdcBalance(chain, chain.payTo)
      const nonce = await minedNonce()
      const refused = proxy.refuseSend()
      const lost = await paidUpload(other.url)
      await refused.cut
      expect(lost.status, JSON.stringify(lost.body.error)).toBe(503)
      // nothing else outstanding: the nonce manager is reset, and the next settlements take the nonce again
      await waitFor(async () => (await recoveries(port)) > 0 ? true : undefined, 'the nonce manager reset', 20_000)
      expect(logged(/nonce manager reset/, other)).toMatchObject({ level: 'warn', nonce })
      const next = [await paidUpload(other.url), await paidUpload(other.url)]
      for (const r of next) expect(r.status, JSON.stringify(r.body.error)).toBe(201)
      expect(await minedNonce()).toBe(nonce + 2)
      expect(await usdcBalance(chain, chain.payTo)).toBe(payToBefore + next[0]!.price + next[1]!.price)
    } finally {
      await other.stop()
      await proxy.close()
    }
  })

  it('a nonce taken but never sent, with a later settlement waiting behind it: the gap is filled and that settlement completes', async () => {
    await rpc('evm_setAutomine', [false])
    const { proxy, port, other } = await pindBehindProxy()
    try {
      const payToBefore = await usdcBalance(chain, chain.payTo)
      const nonce = await minedNonce()
      // the first settlement's send is held at the RPC, then cut: its nonce is taken, its transaction never sent
      const release = Promise.withResolvers<void>()
      const refused = proxy.refuseSend(release.promise)
      const lost = paidUpload(other.url)
      await refused.seen
      // the second settlement takes the next nonce and waits in the pool behind the first
      const waiting = paidUpload(other.url)
      await waitFor(async () => (await settlerPool()).some(t => t.nonce === nonce + 1) ? true : undefined, 'the second settlement in the pool', 20_000)
      release.resolve()
      await refused.cut
      expect((await lost).status).toBe(503)
      await rpc('evm_setIntervalMining', [1])
      const r = await waiting
      expect(r.status, JSON.stringify(r.body.error)).toBe(201)
      expect(logged(/gap filled/, other)).toMatchObject({ level: 'warn', nonce })
      expect(await recoveries(port)).toBeGreaterThan(0)
      // the filler moved no money: exactly the second upload's price
      expect(await minedNonce()).toBe(nonce + 2)
      expect(await usdcBalance(chain, chain.payTo)).toBe(payToBefore + r.price)
    } finally {
      await other.stop()
      await proxy.close()
    }
  })
})
