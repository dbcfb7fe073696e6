/**
 * Hostile origins: a pin request names the addresses pind dials to find its
 * content, so an attacker can name any address — this machine's loopback
 * ports, its Unix sockets, a DNS name that resolves to them — and have pind
 * connect there as its own user, without paying (issue 13, finding 7).
 * Dials are watched from outside: TCP listeners and a Unix socket that count
 * the connections they accept. The real pind (bundle) on the anvil chain.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid } from '../../scripts/peer/index.mjs'
import { chainArgs, payingFetch, signChallenge } from '../helpers/paying-client.js'
import { startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

let chain: DevChain
/** the default: only public addresses are dialled from request-supplied origins */
let strict: PindProcess
/** an operator who allows any address (as the test setup does for loopback origins) */
let open: PindProcess
const listeners: Array<{ server: Server, port: number, accepted: number }> = []
let unix: { server: Server, path: string, accepted: number }

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  const { args, env } = chainArgs(chain)
  const probe = ['--pin-probe-timeout', '2s', '--pin-stall-timeout', '2s', '--pin-retry-window', '8s']
  ;[strict, open] = await Promise.all([
    startPind({ args: [...args, ...probe], env: { ...env, PIND_ORIGIN_ADDRESSES: 'public' } }),
    startPind({ args: [...args, ...probe, '--origin-addresses', 'any'], env })
  ])
  for (let i = 0; i < 20; i++) {
    const l = { server: createServer(), port: 0, accepted: 0 }
    l.server.on('connection', (s) => { l.accepted++; s.on('error', () => {}); s.destroy() })
    await new Promise<void>(resolve => l.server.listen(0, '127.0.0.1', resolve))
    l.port = (l.server.address() as { port: number }).port
    listeners.push(l)
  }
  const path = join(tempDir('pind-unix-'), 'victim.sock')
  unix = { server: createServer(), path, accepted: 0 }
  unix.server.on('connection', (s) => { unix.accepted++; s.on('error', () => {}); s.destroy() })
  await new Promise<void>(resolve => unix.server.listen(path, resolve))
})

afterAll(async () => {
  for (const l of listeners) l.server.close()
  unix?.server.close()
  await Promise.all([strict?.stop(), open?.stop()])
  await chain?.stop()
})

const accepted = (): number => listeners.reduce((n, l) => n + l.accepted, 0) + unix.accepted
const tcp = (i: number): string => `/ip4/127.0.0.1/tcp/${listeners[i % listeners.length]!.port}`
const randomCid = (): string => rawCid(randomBytes(32)).toString()
const quote = async (url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
  await fetch(`${url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

describe('origins named by a pin request', () => {
  it('an unpaid quote dials none of the loopback ports, Unix sockets or local DNS names it lists', async () => {
    const before = accepted()
    const origins = [
      ...Array.from({ length: 17 }, (_, i) => tcp(i)),
      `/dns4/localhost/tcp/${listeners[17]!.port}`,
      `/ip6/::ffff:127.0.0.1/tcp/${listeners[18]!.port}`,
      `/unix/${encodeURIComponent(unix.path)}`
    ]
    const r = await quote(strict.url, { cid: randomCid(), origins })
    expect(r.status).toBe(402)
    expect(accepted() - before).toBe(0)
  })

  it('a paid pin with loopback origins dials none of them while it is fetched', async () => {
    const before = accepted()
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${strict.url}/pins`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid: randomCid(), origins: [tcp(0), tcp(1), tcp(2)] })
    })
    expect(r.status).toBe(202)
    const token = r.headers.get('x-wallet-auth-token') as string
    const { requestid } = await r.json() as any
    // the first fetch attempt is over (it stalled: nobody has this CID)
    await waitFor(async () => {
      const s = await (await fetch(`${strict.url}/pins/${requestid}`, { headers: { authorization: `Bearer ${token}` } })).json() as any
      return /waiting to retry|retry window/.test(s.info.status_details) ? s : undefined
    }, 'a fetch attempt to end')
    expect(accepted() - before).toBe(0)
  })

  it('where the operator allows loopback origins, one quote dials at most 4 of its 20, and one client at most 16 at once', async () => {
    let before = accepted()
    const r = await quote(open.url, { cid: randomCid(), origins: Array.from({ length: 20 }, (_, i) => tcp(i)) })
    expect(r.status).toBe(402)
    const one = accepted() - before
    expect(one).toBeGreaterThan(0) // allowed: dialled
    expect(one).toBeLessThanOrEqual(4)

    before = accepted()
    const answers = await Promise.all(Array.from({ length: 8 }, async (_, q) =>
      (await quote(open.url, { cid: randomCid(), origins: Array.from({ length: 20 }, (_, i) => tcp(i + 4 * q)) })).status))
    expect(accepted() - before).toBeLessThanOrEqual(16)
    expect(answers.filter(s => s === 402).length).toBeGreaterThan(0)
    expect(answers.filter(s => s === 429).length).toBeGreaterThan(0)
    for (const s of answers) expect([402, 429]).toContain(s)
  })

  it('a settled payment replayed with new origins dials none of them', async () => {
    const cid = randomCid()
    const challenge = await quote(open.url, { cid }, { 'x-pin-size': '1000' })
    const header = await signChallenge(chain, chain.payers[1]!.privateKey, challenge)
    const paid = await quote(open.url, { cid }, { 'x-pin-size': '1000', 'payment-signature': header })
    expect(paid.status).toBe(202)
    const before = accepted()
    const replayed = await quote(open.url, { cid: randomCid(), origins: Array.from({ length: 20 }, (_, i) => tcp(i)) }, { 'x-pin-size': '1000', 'payment-signature': header })
    expect(replayed.status).toBe(402)
    expect((await replayed.json() as any).error.details).toMatch(/already used/)
    expect(accepted() - before).toBe(0)
  })
})
