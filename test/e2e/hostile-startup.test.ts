/**
 * Issue 13, finding 15 (= issue 18, item 3): for about 5 s after the port
 * opened (a slow RPC), and for 70–100 ms on every start, every route answered
 * 404, /health and /pins included. Clients hammer the port from the moment
 * it opens: with a slow RPC stand-in in front of the dev chain, and with the
 * chain answering at once. Until every route is there the answer is 503 with Retry-After
 * in the spec's error shape, never a 404.
 */
import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { freePort } from '../helpers/ports.js'

let chain: DevChain
let slowRpc: Server
let slowRpcUrl: string
const started: PindProcess[] = []

/** JSON-RPC forwarded to the dev chain, each answer held back 700 ms (a slow provider) */
beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  slowRpc = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      setTimeout(() => {
        fetch(chain.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) })
          .then(async r => { res.writeHead(r.status, { 'content-type': 'application/json' }); res.end(Buffer.from(await r.arrayBuffer())) })
          .catch(() => { res.destroy() })
      }, 700)
    })
  })
  await new Promise<void>(resolve => { slowRpc.listen(0, '127.0.0.1', resolve) })
  slowRpcUrl = `http://127.0.0.1:${(slowRpc.address() as { port: number }).port}`
})
afterAll(async () => {
  for (const p of started) await p.stop()
  await new Promise(resolve => { slowRpc?.close(resolve) })
  await chain?.stop()
})

interface Seen { path: string, status: number, retryAfter: string | null, body: string }

const PROBES: Array<{ path: string, init?: RequestInit, ready: number }> = [
  { path: '/health', ready: 200 },
  { path: '/pins', ready: 401 },
  { path: '/upload', init: { method: 'POST', headers: { 'x-upload-size': '10', 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--\r\n' }, ready: 402 },
  { path: '/.well-known/agent.json', ready: 200 },
  { path: '/auth/challenge', init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ address: '0x' + '12'.repeat(20) }) }, ready: 200 }
]

/**
 * Four clients send the probes round and round from before the port opens
 * (connection refused is retried at once) until /health answers 200, then
 * one more round each.
 */
async function hammer (url: string): Promise<Seen[]> {
  const seen: Seen[] = []
  let healthy = false
  const deadline = Date.now() + 60_000
  await Promise.all(Array.from({ length: 4 }, async (_, k) => {
    let extra = PROBES.length
    for (let i = k; extra > 0 && Date.now() < deadline; i++) {
      const p = PROBES[i % PROBES.length]!
      let r: Response
      try {
        r = await fetch(`${url}${p.path}`, p.init)
      } catch {
        await new Promise(resolve => setTimeout(resolve, 1))
        continue
      }
      seen.push({ path: p.path, status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() })
      if (p.path === '/health' && r.status === 200) healthy = true
      if (healthy) extra--
    }
  }))
  return seen
}

function expectNo404 (seen: Seen[]): void {
  expect(seen.filter(s => s.status === 404).map(s => `${s.path} ${s.body}`)).toEqual([])
  for (const s of seen.filter(x => x.status === 503)) {
    expect(s.retryAfter).toBe('1')
    expect(JSON.parse(s.body)).toEqual({ error: { reason: 'SERVICE_UNAVAILABLE', details: 'the server is starting; retry shortly' } })
  }
}

describe('the port opens before the routes are all added', () => {
  it('with a slow RPC: every request answers 503 + Retry-After until ready, then each route its own answer', async () => {
    const port = await freePort()
    const { args, env } = chainArgs(chain)
    const hammering = hammer(`http://127.0.0.1:${port}`)
    started.push(await startPind({ args: [...args, '--rpc-url', slowRpcUrl, '--port', String(port)], env }))
    const seen = await hammering
    expectNo404(seen)
    const starting = seen.filter(s => s.status === 503)
    expect(starting.length).toBeGreaterThan(10) // the window was there: seconds of it
    for (const p of PROBES) expect(seen.some(s => s.path === p.path && s.status === p.ready), p.path).toBe(true)
  })


  it('on a plain start (a quick RPC): no 404 in the first moments either', async () => {
    const port = await freePort()
    const { args, env } = chainArgs(chain)
    const hammering = hammer(`http://127.0.0.1:${port}`)
    started.push(await startPind({ args: [...args, '--port', String(port)], env }))
    const seen = await hammering
    expectNo404(seen)
    expect(seen.some(s => s.path === '/health' && s.status === 200)).toBe(true)
  })
})
