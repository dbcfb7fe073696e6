/**
 * A local stand-in for a remote x402 facilitator: the HTTP protocol that
 * @x402/core's HTTPFacilitatorClient speaks (GET /supported, POST /verify,
 * POST /settle), backed by the real x402 facilitator on the dev chain. It lets
 * tests exercise pind's remote-facilitator code path without the internet.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { buildFacilitator } from '../../src/payment/facilitator.js'
import type { DevChain } from '../../scripts/devchain/index.mjs'

export interface StandIn { url: string, calls: string[], close(): Promise<void> }

export interface StandInOptions {
  /** runs after a real settlement, before the answer is sent (e.g. to kill the server waiting for it) */
  afterSettle?: (paymentPayload: unknown) => Promise<void> | void
  /** runs before a settlement, which waits for it; throwing fails the settle call before anything reaches the chain */
  beforeSettle?: (paymentPayload: unknown) => Promise<void> | void
  /** runs before a verification, which waits for it (e.g. a verifier slowed down while the client goes away) */
  beforeVerify?: (paymentPayload: unknown) => Promise<void> | void
}

export async function startFacilitatorStandIn (chain: DevChain, port = 0, opts: StandInOptions = {}): Promise<StandIn> {
  const { client, warm } = buildFacilitator({ kind: 'embedded', network: chain.network ?? 'eip155:167000', rpcUrl: chain.rpcUrl, settlerKey: chain.settlerKey, asset: chain.usdc })
  await warm?.()
  const calls: string[] = []
  const server: Server = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => { body += c.toString() })
    req.on('end', () => {
      calls.push(`${req.method} ${req.url}`)
      const reply = (v: unknown): void => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(v)) }
      const fail = (err: unknown): void => { res.writeHead(500); res.end(JSON.stringify({ error: String(err) })) }
      if (req.method === 'GET' && req.url === '/supported') { client.getSupported().then(reply, fail); return }
      const parsed = body === '' ? {} : JSON.parse(body)
      if (req.method === 'POST' && req.url === '/verify') {
        Promise.resolve(opts.beforeVerify?.(parsed.paymentPayload))
          .then(async () => await client.verify(parsed.paymentPayload, parsed.paymentRequirements))
          .then(reply, fail)
        return
      }
      if (req.method === 'POST' && req.url === '/settle') {
        Promise.resolve().then(async () => { await opts.beforeSettle?.(parsed.paymentPayload) })
          .then(async () => await client.settle(parsed.paymentPayload, parsed.paymentRequirements))
          .then(async (r) => { await opts.afterSettle?.(parsed.paymentPayload); return r })
          .then(reply, fail)
        return
      }
      res.writeHead(404); res.end()
    })
  })
  await new Promise<void>(resolve => server.listen(port, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) }
  }
}
