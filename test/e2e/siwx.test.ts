/**
 * Sign-In-With-X on the owner endpoints, end to end: the built binary on the
 * dev chain; the client side is x402's own (x402HTTPClient and
 * @x402/extensions' SIWX hook) over viem accounts. Without credentials
 * GET /pins, GET and DELETE /pins/{id} answer 401 with a sign-in-with-x
 * challenge in PAYMENT-REQUIRED; a signed header takes the place of the
 * bearer token for EOAs, an EIP-1271 wallet on anvil and an EIP-6492 wallet
 * not deployed yet. Refused with 401: a replay, another domain or URI
 * origin, another chain, too old, expired, not yet valid, issued in the
 * future, another key's signature, a 1271 wallet signed by someone not its
 * owner, a header signed for another path, a huge or malformed header,
 * both credentials at once.
 */
import { randomBytes } from 'node:crypto'
import { x402Client, x402HTTPClient } from '@x402/core/client'
import { createSIWxClientHook } from '@x402/extensions/sign-in-with-x'
import type { CompleteSIWxInfo } from '@x402/extensions/sign-in-with-x'
import { getAddress, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { artifacts, devChainClients, startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { challengeOf, completeInfo, contractWallet, counterfactualWallet, eoa, signFields, signIn } from '../helpers/siwx-client.js'

let chain: DevChain
let pind: PindProcess
let factory: Address
/** deployed OwnedWallet of `walletOwner` */
let wallet: Address
let walletOwner: PrivateKeyAccount
const SALT_DEPLOYED = `0x${'01'.padStart(64, '0')}` as Hex
const SALT_LATER = `0x${'02'.padStart(64, '0')}` as Hex

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  const { publicClient, walletClient } = devChainClients(chain)
  const deployer = walletClient(chain.deployerKey)
  const deployed = await publicClient.waitForTransactionReceipt({ hash: await deployer.deployContract({ abi: artifacts.OwnedWalletFactory.abi, bytecode: artifacts.OwnedWalletFactory.bytecode }) })
  factory = getAddress(deployed.contractAddress as Address)
  walletOwner = privateKeyToAccount(generatePrivateKey())
  wallet = await publicClient.readContract({ address: factory, abi: artifacts.OwnedWalletFactory.abi, functionName: 'addressOf', args: [walletOwner.address, SALT_DEPLOYED] }) as Address
  const tx = await deployer.writeContract({ address: factory, abi: artifacts.OwnedWalletFactory.abi, functionName: 'deploy', args: [walletOwner.address, SALT_DEPLOYED] })
  expect((await publicClient.waitForTransactionReceipt({ hash: tx })).status).toBe('success')
  expect(await publicClient.getCode({ address: wallet })).toMatch(/^0x[0-9a-f]{20,}/)
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args, env: { ...env, PIND_LOG_LEVEL: 'info' } })
})
afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

const unsigned = async (path: string, method = 'GET'): Promise<Response> => await fetch(`${pind.url}${path}`, { method })
const withSiwx = async (path: string, header: string, method = 'GET'): Promise<Response> =>
  await fetch(`${pind.url}${path}`, { method, headers: { 'sign-in-with-x': header } })

/** a 401 in the spec's shape whose details name `reason`, with a fresh challenge */
async function expect401 (r: Response, reason: RegExp): Promise<void> {
  const text = await r.text()
  expect(r.status, text).toBe(401)
  const body = JSON.parse(text) as { error: { reason: string, details: string } }
  expect(body.error.reason).toBe('UNAUTHORIZED')
  expect(body.error.details).toMatch(reason)
  expect(r.headers.get('www-authenticate')).toBe('Bearer')
  expect(challengeOf(r).extension.info.nonce).toMatch(/^[0-9a-f]{32}$/)
}

/** the fields of a fresh challenge for `path`, to be changed by a test before signing */
async function fields (path: string): Promise<CompleteSIWxInfo> {
  return completeInfo(challengeOf(await unsigned(path)).extension)
}

describe('Sign-In-With-X on the owner endpoints', () => {
  it('answers 401 with a sign-in-with-x challenge in PAYMENT-REQUIRED on GET /pins, GET and DELETE /pins/{id}', async () => {
    for (const [path, method] of [['/pins', 'GET'], ['/pins/abc', 'GET'], ['/pins/abc', 'DELETE']] as const) {
      const r = await unsigned(path, method)
      expect(r.status).toBe(401)
      expect(r.headers.get('www-authenticate')).toBe('Bearer')
      expect((await r.clone().json() as any).error.reason).toBe('UNAUTHORIZED')
      const c = challengeOf(r)
      expect(c.accepts).toEqual([])
      const host = new URL(pind.url).host
      expect(c.extension.info).toMatchObject({ domain: host, uri: `${pind.url}${path}`, version: '1', resources: [`${pind.url}${path}`] })
      expect(Date.parse(c.extension.info.expirationTime as string) - Date.parse(c.extension.info.issuedAt)).toBe(5 * 60 * 1000)
      expect(c.extension.supportedChains).toEqual([{ chainId: 'eip155:167000', type: 'eip191' }])
    }
    // each challenge has a nonce of its own
    const a = challengeOf(await unsigned('/pins')).extension.info.nonce
    const b = challengeOf(await unsigned('/pins')).extension.info.nonce
    expect(a).not.toBe(b)
  })

  it('signs a payer in with an EOA: lists, reads and deletes its pins; another wallet sees 404; a header is good once', async () => {
    const payer = chain.payers[0]!
    const account = privateKeyToAccount(payer.privateKey)
    const up = await payingFetch(chain, payer.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(5000)), headers: { 'x-pin-duration-months': '1' } })
    expect(up.status, await up.clone().text()).toBe(201)
    const { requestid } = await up.json() as { requestid: string }

    const list = `${pind.url}/pins`
    const header = await signIn(await unsigned('/pins'), list, eoa(account))
    const listed = await withSiwx('/pins', header)
    expect(listed.status, await listed.clone().text()).toBe(200)
    const body = await listed.json() as { count: number, results: Array<{ requestid: string }> }
    expect(body.count).toBe(1)
    expect(body.results[0]?.requestid).toBe(requestid)

    // the same header again: a replay
    await expect401(await withSiwx('/pins', header), /nonce was used already.*invalid_siwx_nonce/)

    const one = `/pins/${requestid}`
    const got = await withSiwx(one, await signIn(await unsigned(one), `${pind.url}${one}`, eoa(account)))
    expect(got.status).toBe(200)
    expect((await got.json() as any).requestid).toBe(requestid)

    // another wallet, signed in properly, does not see it
    const stranger = privateKeyToAccount(generatePrivateKey())
    const foreign = await withSiwx(one, await signIn(await unsigned(one), `${pind.url}${one}`, eoa(stranger)), 'DELETE')
    expect(foreign.status).toBe(404)

    // a header signed for the list is not taken to delete
    await expect401(await withSiwx(one, await signIn(await unsigned('/pins'), list, eoa(account)), 'DELETE'), /URI is for \/pins, this request is for \/pins\/.*invalid_siwx_uri_mismatch/)
    const del = await withSiwx(one, await signIn(await unsigned(one, 'DELETE'), `${pind.url}${one}`, eoa(account)), 'DELETE')
    expect(del.status, await del.clone().text()).toBe(202)
    const gone = await withSiwx(one, await signIn(await unsigned(one), `${pind.url}${one}`, eoa(account)))
    expect(gone.status).toBe(404)

    // the log has the requests, not the headers
    expect(pind.stdout() + pind.stderr()).toMatch(/"path":"\/pins"/)
    expect(pind.stdout() + pind.stderr()).not.toContain(header.slice(0, 60))
    expect(pind.stdout() + pind.stderr()).not.toContain(JSON.parse(Buffer.from(header, 'base64').toString()).signature)

    // bearer tokens still work, and a bad one is answered with a challenge too
    const token = up.headers.get('x-wallet-auth-token') as string
    expect((await fetch(list, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
    await expect401(await fetch(list, { headers: { authorization: 'Bearer nonsense' } }), /./)
    await expect401(await fetch(list, { headers: { authorization: `Bearer ${token}`, 'sign-in-with-x': header } }), /not both/)
  })

  it('signs in an EIP-1271 wallet through its owner, and refuses it signed by anyone else', async () => {
    const r = await withSiwx('/pins', await signIn(await unsigned('/pins'), `${pind.url}/pins`, contractWallet(wallet, walletOwner)))
    expect(r.status, await r.clone().text()).toBe(200)
    expect(await r.json()).toEqual({ count: 0, results: [] })

    const intruder = privateKeyToAccount(generatePrivateKey())
    await expect401(await withSiwx('/pins', await signIn(await unsigned('/pins'), `${pind.url}/pins`, contractWallet(wallet, intruder))), /invalid_siwx_signature/)
  })

  it('signs in an EIP-6492 wallet not deployed yet (without deploying it), and refuses it wrapped around someone else\'s signature', async () => {
    const { publicClient } = devChainClients(chain)
    const later = await publicClient.readContract({ address: factory, abi: artifacts.OwnedWalletFactory.abi, functionName: 'addressOf', args: [walletOwner.address, SALT_LATER] }) as Address
    expect(await publicClient.getCode({ address: later })).toBeUndefined()
    const r = await withSiwx('/pins', await signIn(await unsigned('/pins'), `${pind.url}/pins`, counterfactualWallet(later, factory, SALT_LATER, walletOwner)))
    expect(r.status, await r.clone().text()).toBe(200)
    expect(await publicClient.getCode({ address: later })).toBeUndefined()

    const intruder = privateKeyToAccount(generatePrivateKey())
    // the factory call deploys walletOwner's wallet; the signature inside is the intruder's
    const forged = counterfactualWallet(later, factory, SALT_LATER, walletOwner)
    const wrapped = { address: later, signMessage: async (a: { message: string }) => (await forged.signMessage({ message: a.message })).replace((await walletOwner.signMessage({ message: a.message })).slice(2), (await intruder.signMessage({ message: a.message })).slice(2)) }
    await expect401(await withSiwx('/pins', await signIn(await unsigned('/pins'), `${pind.url}/pins`, wrapped)), /invalid_siwx_signature/)
  })

  it('refuses another key\'s signature for an address, and messages for another domain, URI origin or chain', async () => {
    const account = privateKeyToAccount(generatePrivateKey())
    const other = privateKeyToAccount(generatePrivateKey())
    const sign = (a: PrivateKeyAccount) => async (message: string): Promise<Hex> => await a.signMessage({ message })

    await expect401(await withSiwx('/pins', await signFields(await fields('/pins'), account.address, sign(other))), /invalid_siwx_signature/)
    await expect401(await withSiwx('/pins', await signFields({ ...await fields('/pins'), domain: 'evil.example' }, account.address, sign(account))), /invalid_siwx_domain_mismatch/)
    await expect401(await withSiwx('/pins', await signFields({ ...await fields('/pins'), uri: 'https://evil.example/pins' }, account.address, sign(account))), /invalid_siwx_uri_mismatch/)
    await expect401(await withSiwx('/pins', await signFields({ ...await fields('/pins'), chainId: 'eip155:1' }, account.address, sign(account))), /chain eip155:1.*invalid_siwx_chain_id/)
  })

  it('refuses messages too old, expired, not yet valid or issued in the future', async () => {
    const account = privateKeyToAccount(generatePrivateKey())
    const sign = async (message: string): Promise<Hex> => await account.signMessage({ message })
    const at = (ms: number): string => new Date(Date.now() + ms).toISOString()
    const minute = 60_000
    await expect401(await withSiwx('/pins', await signFields({ ...await fields('/pins'), issuedAt: at(-10 * minute), expirationTime: at(10 * minute) }, account.address, sign)), /invalid_siwx_issued_at_too_old/)
    await expect401(await withSiwx('/pins', await signFields({ ...await fields('/pins'), issuedAt: at(-2000), expirationTime: at(-1000) }, account.address, sign)), /invalid_siwx_expired/)
    await expect401(await withSiwx('/pins', await signFields({ ...await fields('/pins'), notBefore: at(60 * minute) }, account.address, sign)), /invalid_siwx_not_yet_valid/)
    await expect401(await withSiwx('/pins', await signFields({ ...await fields('/pins'), issuedAt: at(10 * minute), expirationTime: at(15 * minute) }, account.address, sign)), /invalid_siwx_issued_at_in_future/)
  })

  it('works with the client docs/siwx.md shows (a 401 retried through x402HTTPClient and the SIWX hook)', async () => {
    const key = generatePrivateKey()
    // as in docs/siwx.md
    const http = new x402HTTPClient(new x402Client()).onPaymentRequired(createSIWxClientHook(privateKeyToAccount(key)))
    async function ownerFetch (url: string, init: RequestInit = {}): Promise<Response> {
      const r = await fetch(url, init)
      if (r.status !== 401 || r.headers.get('payment-required') == null) return r
      const headers = await http.handlePaymentRequired(http.getPaymentRequiredResponse(n => r.headers.get(n)), url)
      if (headers == null) return r
      return await fetch(url, { ...init, headers: { ...Object.fromEntries(new Headers(init.headers)), ...headers } })
    }
    const r = await ownerFetch(`${pind.url}/pins?status=queued,pinning,pinned,failed`)
    expect(r.status, await r.clone().text()).toBe(200)
    expect(await r.json()).toEqual({ count: 0, results: [] })
  })

  it('refuses a huge, a malformed and an empty header with 401, and stays up', async () => {
    await expect401(await withSiwx('/pins', 'A'.repeat(9000)), /over 8192 characters/)
    await expect401(await withSiwx('/pins', '!!not base64!!'), /not valid base64/)
    await expect401(await withSiwx('/pins', Buffer.from('{"domain":1}').toString('base64')), /Invalid SIWX header/)
    await expect401(await withSiwx('/pins', Buffer.from('[[[').toString('base64')), /not valid JSON/)
    const account = privateKeyToAccount(generatePrivateKey())
    const info = await fields('/pins')
    const good = JSON.parse(Buffer.from(await signFields(info, account.address, async (m) => await account.signMessage({ message: m })), 'base64').toString()) as Record<string, unknown>
    await expect401(await withSiwx('/pins', Buffer.from(JSON.stringify({ ...good, signature: 'zz' })).toString('base64')), /invalid_siwx_malformed_signature/)
    await expect401(await withSiwx('/pins', Buffer.from(JSON.stringify({ ...good, nonce: 'a b' })).toString('base64')), /invalid_siwx_nonce/)
    await expect401(await withSiwx('/pins', Buffer.from(JSON.stringify({ ...good, chainId: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', type: 'ed25519' })).toString('base64')), /invalid_siwx_chain_id/)
    expect((await fetch(`${pind.url}/health`)).status).toBe(200)
  })
})
