/**
 * SignInWithX in process, with the package's own client side and viem
 * accounts, and a nonce store that counts its calls: what reaches the ledger
 * (only headers whose signature checks out, marked until issuedAt + 10
 * minutes), and what a contract verifier is asked (only what is not an EOA's
 * signature).
 */
import { createSIWxPayload, encodeSIWxHeader, type SIWxExtension } from '@x402/extensions/sign-in-with-x'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { describe, expect, it } from 'vitest'
import { CLOCK_SKEW_MS, MAX_AGE_MS, MAX_CONTRACT_CHECKS, SignInWithX, SiwxError, SiwxUnavailableError } from '../../../src/auth/siwx.js'

const PUBLIC = 'https://pins.example'

function service (o: { contract?: (args: { address: string }) => Promise<boolean>, publicUrl?: string } = {}) {
  const marks: Array<{ nonce: string, until: Date }> = []
  const asked: string[] = []
  const used = new Set<string>()
  const siwx = new SignInWithX({
    publicUrl: o.publicUrl ?? `${PUBLIC}/`,
    network: 'eip155:167000',
    useNonce: async (nonce, until) => {
      marks.push({ nonce, until })
      if (used.has(nonce)) return false
      used.add(nonce)
      return true
    },
    ...(o.contract != null ? { contractVerifier: () => async (args) => { asked.push(args.address); return await o.contract!(args) } } : {})
  })
  return { siwx, marks, asked }
}

async function challenge (siwx: SignInWithX, path = '/pins'): Promise<SIWxExtension> {
  const required = JSON.parse(Buffer.from(await siwx.challenge(path, 'sign in'), 'base64').toString()) as { accepts: unknown[], extensions: Record<string, SIWxExtension> }
  expect(required.accepts).toEqual([])
  return required.extensions['sign-in-with-x'] as SIWxExtension
}

async function header (ext: SIWxExtension, signer: { address: string, signMessage: (a: { message: string }) => Promise<string> }, changes: Record<string, string> = {}): Promise<string> {
  const payload = await createSIWxPayload({ ...ext.info, chainId: 'eip155:167000', type: 'eip191' }, signer, `${PUBLIC}/pins`)
  return encodeSIWxHeader({ ...payload, ...changes })
}

describe('SignInWithX', () => {
  it('signs an EOA in without asking the chain, and marks its nonce until issuedAt + max age + clock skew', async () => {
    const { siwx, marks, asked } = service({ contract: async () => true })
    const account = privateKeyToAccount(generatePrivateKey())
    const ext = await challenge(siwx)
    expect(ext.info).toMatchObject({ domain: 'pins.example', uri: `${PUBLIC}/pins`, resources: [`${PUBLIC}/pins`] })
    expect(await siwx.verify(await header(ext, account), '/pins')).toBe(account.address.toLowerCase())
    expect(asked).toEqual([])
    expect(marks).toEqual([{ nonce: ext.info.nonce, until: new Date(Date.parse(ext.info.issuedAt) + MAX_AGE_MS + CLOCK_SKEW_MS) }])
  })

  it('writes no mark for a header that does not sign in', async () => {
    const { siwx, marks } = service()
    const account = privateKeyToAccount(generatePrivateKey())
    const other = privateKeyToAccount(generatePrivateKey())
    const ext = await challenge(siwx)
    const forged = await header(ext, { address: account.address, signMessage: async (a) => await other.signMessage(a) })
    await expect(siwx.verify(forged, '/pins')).rejects.toMatchObject({ name: 'SiwxError', reason: 'invalid_siwx_signature' })
    await expect(siwx.verify(await header(ext, account, { domain: 'evil.example' }), '/pins')).rejects.toMatchObject({ reason: 'invalid_siwx_domain_mismatch' })
    await expect(siwx.verify(await header(ext, account, { chainId: 'eip155:1' }), '/pins')).rejects.toMatchObject({ reason: 'invalid_siwx_chain_id' })
    await expect(siwx.verify('x'.repeat(10_000), '/pins')).rejects.toBeInstanceOf(SiwxError)
    expect(marks).toEqual([])
  })

  it('asks the contract verifier for what is not an EOA\'s signature, without it refuses saying why, and a throwing verifier is a 503', async () => {
    const wallet = '0x' + 'ab'.repeat(20)
    const owner = privateKeyToAccount(generatePrivateKey())
    const asWallet = { address: wallet, signMessage: async (a: { message: string }) => await owner.signMessage(a) }

    const yes = service({ contract: async () => true })
    expect(await yes.siwx.verify(await header(await challenge(yes.siwx), asWallet), '/pins')).toBe(wallet)
    expect(yes.asked).toEqual([wallet])

    const none = service()
    await expect(none.siwx.verify(await header(await challenge(none.siwx), asWallet), '/pins')).rejects.toThrow(/no RPC/)
    expect(none.marks).toEqual([])

    const broken = service({ contract: async () => { throw new Error('rpc down') } })
    await expect(broken.siwx.verify(await header(await challenge(broken.siwx), asWallet), '/pins')).rejects.toBeInstanceOf(SiwxUnavailableError)
    expect(broken.marks).toEqual([])
  })

  it(`checks at most ${MAX_CONTRACT_CHECKS} contract wallets at once: past that 503, and nothing marked`, async () => {
    let release!: () => void
    const held = new Promise<void>(resolve => { release = resolve })
    const slow = service({ contract: async () => { await held; return true } })
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = (i: number): { address: string, signMessage: (a: { message: string }) => Promise<string> } => ({ address: '0x' + i.toString(16).padStart(40, '0'), signMessage: async (a) => await owner.signMessage(a) })
    const headers = await Promise.all(Array.from({ length: MAX_CONTRACT_CHECKS + 1 }, async (_, i) => await header(await challenge(slow.siwx), wallet(i + 1))))
    const running = headers.slice(0, MAX_CONTRACT_CHECKS).map(async (h) => await slow.siwx.verify(h, '/pins'))
    while (slow.asked.length < MAX_CONTRACT_CHECKS) await new Promise(resolve => setImmediate(resolve))
    await expect(slow.siwx.verify(headers[MAX_CONTRACT_CHECKS] as string, '/pins')).rejects.toBeInstanceOf(SiwxUnavailableError)
    release()
    expect(await Promise.all(running)).toHaveLength(MAX_CONTRACT_CHECKS)
    expect(slow.marks).toHaveLength(MAX_CONTRACT_CHECKS)
  })

  it('binds a header to its request\'s path, under a public URL with a path of its own too', async () => {
    const account = privateKeyToAccount(generatePrivateKey())
    const { siwx, marks } = service({ publicUrl: `${PUBLIC}/api` })
    const ext = await challenge(siwx, '/pins/abc?x=1')
    expect(ext.info.uri).toBe(`${PUBLIC}/api/pins/abc?x=1`)
    await expect(siwx.verify(await header(ext, account), '/pins')).rejects.toMatchObject({ reason: 'invalid_siwx_uri_mismatch' })
    await expect(siwx.verify(await header(ext, account, { uri: `${PUBLIC}/pins/abc` }), '/pins/abc')).rejects.toMatchObject({ reason: 'invalid_siwx_uri_mismatch' })
    expect(marks).toEqual([])
    expect(await siwx.verify(await header(ext, account), '/pins/abc')).toBe(account.address.toLowerCase())
  })

  it('refuses the second use of a nonce', async () => {
    const { siwx } = service()
    const account = privateKeyToAccount(generatePrivateKey())
    const h = await header(await challenge(siwx), account)
    await siwx.verify(h, '/pins')
    await expect(siwx.verify(h, '/pins')).rejects.toMatchObject({ reason: 'invalid_siwx_nonce' })
  })
})
