/**
 * Payments on two networks at once (issue 38, docs/networks.md): two anvil
 * chains (ids 167000 and 8453, each with its own EIP-3009 USDC) and one pind
 * (the packaged binary: npm run build) accepting both — the first from the single-network flags, the
 * second from PIND_NETWORKS with its settler key in a variable named by the
 * entry. The real x402 client pays on the network it is given; each payment
 * settles on its own chain and the balances on both reconcile to the unit.
 * Payments signed for one network and presented with the other's terms, or
 * with terms mixed from both, are refused with nothing moved. With one chain's
 * RPC gone the other's payments go on and /ready names the dead network.
 */
import { randomBytes } from 'node:crypto'
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { callPaying, mcpClient } from '../helpers/mcp-client.js'
import { chainArgs, payingFetch, signChallenge, uploadChallenge, uploadForm } from '../helpers/paying-client.js'
import { BINARY, runPind, startPind, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

let taiko: DevChain
let base: DevChain
let pind: PindProcess
let metricsPort: number
const SIZE = 1000
/** the price of a 1-month upload of SIZE bytes: the minimum (the same number in each asset's atomic units) */
const PRICE = 1000n

async function balances (): Promise<Record<string, bigint>> {
  const [tp, tt, bp, bt] = await Promise.all([
    usdcBalance(taiko, taiko.payers[0]!.address), usdcBalance(taiko, taiko.payTo),
    usdcBalance(base, base.payers[0]!.address), usdcBalance(base, base.payTo)
  ])
  return { taikoPayer: tp, taikoPayTo: tt, basePayer: bp, basePayTo: bt }
}

async function upload (chain: DevChain): Promise<Response> {
  return await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload`, {
    method: 'POST', headers: { 'x-pin-duration-months': '1' }, body: uploadForm(randomBytes(SIZE))
  })
}

/** a paid upload sent by hand with the given PAYMENT-SIGNATURE (the file as quoted) */
async function uploadWith (signature: string): Promise<Response> {
  return await fetch(`${pind.url}/upload`, {
    method: 'POST', headers: { 'x-pin-duration-months': '1', 'x-upload-size': String(SIZE), 'payment-signature': signature }, body: uploadForm(randomBytes(SIZE))
  })
}

async function ready (): Promise<any> {
  return await (await fetch(`${pind.url}/ready`)).json()
}

beforeAll(async () => {
  ;[taiko, base] = await Promise.all([startDevChain({ payers: 1 }), startDevChain({ payers: 1, chainId: 8453 })])
  metricsPort = await freePort()
  const a = chainArgs(taiko)
  pind = await startPind({
    binary: BINARY,
    args: [...a.args, '--metrics-listen', `127.0.0.1:${metricsPort}`],
    env: {
      ...a.env,
      PIND_BASE_SETTLER_KEY: base.settlerKey,
      PIND_NETWORKS: JSON.stringify([{ network: 'eip155:8453', asset: base.usdc, assetName: 'USD Coin', assetVersion: '2', payTo: base.payTo, rpcUrl: base.rpcUrl, settlerKeyEnv: 'PIND_BASE_SETTLER_KEY' }])
    }
  })
  // both networks started (each reads its chain at start)
  await waitFor(async () => { const r = await ready(); return r.status === 'ready' && r.checks.payments.state === 'ready' ? true : undefined }, 'both networks ready')
})
afterAll(async () => {
  await pind?.stop('SIGKILL')
  await Promise.all([taiko?.stop(), base?.stop()])
})

describe('payments on two networks', () => {
  it('the 402 lists both networks in accepts: the same amount, each with its own asset, pay-to and EIP-712 domain', async () => {
    const r = await uploadChallenge(pind.url, SIZE)
    expect(r.status).toBe(402)
    const pr = decodePaymentRequiredHeader(r.headers.get('payment-required') as string)
    expect(pr.accepts.map(a => a.network)).toEqual(['eip155:167000', 'eip155:8453'])
    for (const [a, chain] of [[pr.accepts[0]!, taiko], [pr.accepts[1]!, base]] as const) {
      expect(a).toMatchObject({ scheme: 'exact', amount: PRICE.toString(), asset: chain.usdc, payTo: chain.payTo, extra: { name: 'USD Coin', version: '2' } })
    }
    const body = await r.json() as any
    expect(body.networks.map((n: any) => n.network)).toEqual(['eip155:167000', 'eip155:8453'])
    // the discovery documents name both
    const x402 = await (await fetch(`${pind.url}/.well-known/x402`)).text()
    const card = await (await fetch(`${pind.url}/.well-known/agent-card.json`)).text()
    const llms = await (await fetch(`${pind.url}/llms.txt`)).text()
    const landing = await (await fetch(`${pind.url}/`)).text()
    const openapi = await (await fetch(`${pind.url}/openapi.json`)).json() as any
    expect(openapi.paths['/upload'].post['x-payment-info'].accepts.map((a: any) => a.network)).toEqual(['eip155:167000', 'eip155:8453'])
    expect(JSON.parse(card).capabilities.extensions[0].params.accepts.map((a: any) => a.network)).toEqual(['eip155:167000', 'eip155:8453'])
    for (const doc of [x402, card, llms, landing, JSON.stringify(openapi)]) {
      expect(doc).toContain('eip155:167000')
      expect(doc).toContain('eip155:8453')
    }
    // never a settler key
    for (const doc of [x402, card, llms, landing, JSON.stringify(openapi), JSON.stringify(await ready())]) {
      expect(doc).not.toContain(base.settlerKey.slice(2))
      expect(doc).not.toContain(taiko.settlerKey.slice(2))
    }
  })

  it('a payment on each network settles on its own chain: payer and pay-to move by exactly the price there, and nothing on the other', async () => {
    const before = await balances()
    const onTaiko = await upload(taiko)
    expect(onTaiko.status, await onTaiko.clone().text()).toBe(201)
    const t = await onTaiko.json() as any
    expect(t.price?.network ?? t.payment?.network).toBe('eip155:167000')
    const mid = await balances()
    expect(mid).toEqual({ ...before, taikoPayer: before.taikoPayer! - PRICE, taikoPayTo: before.taikoPayTo! + PRICE })

    const onBase = await upload(base)
    expect(onBase.status, await onBase.clone().text()).toBe(201)
    const b = await onBase.json() as any
    expect(b.price?.network ?? b.payment?.network).toBe('eip155:8453')
    expect(await balances()).toEqual({ ...mid, basePayer: mid.basePayer! - PRICE, basePayTo: mid.basePayTo! + PRICE })

    // the ledger export records the network each was paid on, the pins and the payments
    const exp = await runPind(['export-ledger', '--data-dir', pind.dataDir], { binary: BINARY })
    expect(exp.code, exp.err).toBe(0)
    const lines = exp.out.split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Record<string, unknown>)
    const pins = lines.filter(l => l.type === 'pin')
    const payments = lines.filter(l => l.type === 'payment')
    expect(pins.map(p => p.network).sort()).toEqual(['eip155:167000', 'eip155:8453'])
    expect(payments.map(p => p.network).sort()).toEqual(['eip155:167000', 'eip155:8453'])
    expect(JSON.stringify(lines)).not.toContain(base.settlerKey.slice(2))

    // pind status: revenue by network
    const st = await runPind(['status', '--json', '--data-dir', pind.dataDir], { binary: BINARY })
    expect(st.code, st.err).toBe(0)
    const status = JSON.parse(st.out)
    expect(status.revenue.byNetwork).toEqual([
      { network: 'eip155:167000', payments: 1, amount: PRICE.toString(), usdc: '0.001000' },
      { network: 'eip155:8453', payments: 1, amount: PRICE.toString(), usdc: '0.001000' }
    ])
    expect(status.serve.payments.networks.map((n: any) => [n.network, n.state])).toEqual([['eip155:167000', 'ready'], ['eip155:8453', 'ready']])

    // metrics by network
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    expect(metrics).toContain(`pind_network_settled_atomic_total{network="eip155:167000"} ${PRICE}`)
    expect(metrics).toContain(`pind_network_settled_atomic_total{network="eip155:8453"} ${PRICE}`)
    expect(metrics).toContain('pind_network_payments_up{network="eip155:8453"} 1')
  })

  it('a payment signed for one network, presented with the other network\'s terms, is refused and moves nothing', async () => {
    const before = await balances()
    const challenge = await uploadChallenge(pind.url, SIZE)
    const pr = decodePaymentRequiredHeader(challenge.headers.get('payment-required') as string)
    const [taikoTerms, baseTerms] = pr.accepts as [typeof pr.accepts[0], typeof pr.accepts[0]]
    // signed on Base (EIP-712 domain chain id 8453; the token has the same address on both chains)
    const signed = decodePaymentSignatureHeader(await signChallenge(base, base.payers[0]!.privateKey, challenge))
    expect(signed.accepted.network).toBe('eip155:8453')
    // claimed as Taiko's: it matches Taiko's terms, and Taiko's verification refuses the signature
    const asTaiko = await uploadWith(encodePaymentSignatureHeader({ ...signed, accepted: taikoTerms }))
    expect(asTaiko.status).toBe(402)
    expect((await asTaiko.json() as any).error.details).toMatch(/refused/)
    // Base's terms with Taiko's pay-to swapped in (here the same address: use another) match no network
    const mixed = await uploadWith(encodePaymentSignatureHeader({ ...signed, accepted: { ...baseTerms, payTo: taiko.payers[0]!.address } }))
    expect(mixed.status).toBe(402)
    expect((await mixed.json() as any).error.details).toMatch(/does not match/)
    // Taiko's terms with Base's network and Taiko's asset elsewhere: no match either
    const otherAsset = await uploadWith(encodePaymentSignatureHeader({ ...signed, accepted: { ...baseTerms, asset: taiko.payers[0]!.address } }))
    expect(otherAsset.status).toBe(402)
    expect(await balances()).toEqual(before)
    // the same signature, honest (Base's terms), still pays once on Base
    const honest = await uploadWith(encodePaymentSignatureHeader(signed))
    expect(honest.status, await honest.clone().text()).toBe(201)
    expect(await balances()).toEqual({ ...before, basePayer: before.basePayer! - PRICE, basePayTo: before.basePayTo! + PRICE })
  })

  it('over MCP too: a paid tool\'s challenge lists both networks, and a payment on Base settles on Base', async () => {
    const client = await mcpClient(pind.url)
    try {
      const before = await balances()
      const { challenge, result } = await callPaying(client, base, base.payers[0]!.privateKey, 'upload_content', { content: 'hello from base', filename: 'base.txt' })
      expect(challenge.accepts.map(a => a.network)).toEqual(['eip155:167000', 'eip155:8453'])
      expect(result.isError, JSON.stringify(result).slice(0, 500)).not.toBe(true)
      const after = await balances()
      const price = before.basePayer! - after.basePayer!
      expect(price).toBe(BigInt(challenge.accepts[1]!.amount))
      expect(after).toEqual({ ...before, basePayer: before.basePayer! - price, basePayTo: before.basePayTo! + price })
    } finally {
      await client.close()
    }
  })

  it('one network\'s unfunded settler stops only that network: 503 with nothing charged there, the other goes on', async () => {
    const setBalance = async (wei: bigint): Promise<void> => {
      const r = await fetch(base.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_setBalance', params: [base.settlerAddress, `0x${wei.toString(16)}`] }) })
      expect((await r.json() as any).error).toBeUndefined()
    }
    await setBalance(0n)
    const r = await waitFor(async () => {
      const r = await ready()
      return r.checks.payments.networks?.['eip155:8453']?.state === 'unfunded' ? r : undefined
    }, '/ready to name eip155:8453 unfunded')
    expect(r.status).toBe('ready')
    expect(r.checks.payments).toMatchObject({ ok: true, state: 'degraded', networks: { 'eip155:167000': { ok: true, state: 'ready' } } })
    const before = await balances()
    const onBase = await upload(base)
    expect(onBase.status).toBe(503)
    expect(onBase.headers.get('retry-after')).not.toBeNull()
    expect((await onBase.json() as any).error.details).toMatch(/eip155:8453/)
    expect(await balances()).toEqual(before)
    const onTaiko = await upload(taiko)
    expect(onTaiko.status, await onTaiko.clone().text()).toBe(201)
    expect(await balances()).toEqual({ ...before, taikoPayer: before.taikoPayer! - PRICE, taikoPayTo: before.taikoPayTo! + PRICE })
    // funded again: both work
    await setBalance(10n ** 21n)
    await waitFor(async () => (await ready()).checks.payments.state === 'ready' ? true : undefined, 'both networks ready again')
    const again = await upload(base)
    expect(again.status, await again.clone().text()).toBe(201)
  })

  it('with one chain\'s RPC gone, payments on the other go on, a payment on the dead one gets 503, and /ready names it', async () => {
    const taikoBefore = await usdcBalance(taiko, taiko.payers[0]!.address)
    await base.stop()
    const r = await waitFor(async () => {
      const r = await ready()
      return r.checks.payments.networks?.['eip155:8453']?.ok === false ? r : undefined
    }, '/ready to name eip155:8453')
    expect(r.status).toBe('ready')
    expect(r.checks.payments).toMatchObject({ ok: true, state: 'degraded', networks: { 'eip155:167000': { ok: true, state: 'ready' }, 'eip155:8453': { ok: false, state: 'unreachable' } } })
    expect(r.checks.payments.error).toMatch(/eip155:8453/)

    const onBase = await upload(base)
    expect(onBase.status).toBe(503)
    const onTaiko = await upload(taiko)
    expect(onTaiko.status, await onTaiko.clone().text()).toBe(201)
    expect(await usdcBalance(taiko, taiko.payers[0]!.address)).toBe(taikoBefore - PRICE)
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    expect(metrics).toContain('pind_network_payments_up{network="eip155:8453"} 0')
    expect(metrics).toContain('pind_network_payments_up{network="eip155:167000"} 1')
  })
})

describe('a bad networks entry', () => {
  it('stops serve at start with a message naming the entry, and no key in it', async () => {
    const a = chainArgs(taiko)
    const r = await runPind(['serve', '--data-dir', pind.dataDir + '-bad', '--port', '0', ...a.args], {
      binary: BINARY,
      env: { ...a.env, PIND_NETWORKS: JSON.stringify([{ network: 'eip155:8453', asset: base.usdc, payTo: base.payTo, rpcUrl: 'http://127.0.0.1:1', settlerKeyEnv: 'PIND_BASE_KEY' }, { network: 'eip155:8453', asset: base.usdc, payTo: '0x12', facilitatorUrl: 'http://127.0.0.1:1' }]), PIND_BASE_KEY: base.settlerKey }
    })
    expect(r.code).not.toBe(0)
    expect(r.err).toMatch(/invalid PIND_NETWORKS: entry 2 \(eip155:8453\): payTo: expected a 0x-prefixed 20-byte hex address/)
    expect(r.err + r.out).not.toContain(base.settlerKey.slice(2))
  })
})
