/**
 * Facilitator both ways, and start-up behaviour: the remote facilitator path
 * against a local stand-in, an unreachable facilitator or RPC (serve starts,
 * writes answer 503 with Retry-After, payments recover in the background), and
 * a misconfigured asset (serve refuses to start, clearly).
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { startFacilitatorStandIn } from '../helpers/facilitator-standin.js'
import { payingFetch, uploadForm } from '../helpers/paying-client.js'
import { spawnPind, startPind, tempDir } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

let chain: DevChain
beforeAll(async () => { chain = await startDevChain({ payers: 2 }) })
afterAll(async () => { await chain?.stop() })

describe('remote facilitator', () => {
  it('starts while the facilitator is down, answers 503 with Retry-After, then pays through it once it is up', async () => {
    const port = await freePort()
    const pind = await startPind({ args: ['--facilitator-url', `http://127.0.0.1:${port}`, '--asset', chain.usdc, '--pay-to', chain.payTo] })
    let standIn
    try {
      const health = await fetch(`${pind.url}/health`)
      expect(health.status).toBe(200)
      const down = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'x-upload-size': '10' }, body: 'x' })
      expect(down.status).toBe(503)
      expect(down.headers.get('retry-after')).toMatch(/^\d+$/)
      expect((await down.json() as any).error.reason).toBe('SERVICE_UNAVAILABLE')

      standIn = await startFacilitatorStandIn(chain, port)
      await waitFor(async () => {
        const r = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'x-upload-size': '10', 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--\r\n' })
        return r.status === 402 ? true : undefined
      }, 'payments ready through the stand-in', 60_000)

      const payer = chain.payers[0]!
      const before = await usdcBalance(chain, payer.address)
      const r = await payingFetch(chain, payer.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(1234)) })
      expect(r.status).toBe(201)
      expect(await usdcBalance(chain, payer.address)).toBe(before - 1000n)
      expect(standIn.calls).toContain('POST /verify')
      expect(standIn.calls).toContain('POST /settle')
    } finally {
      await pind.stop()
      await standIn?.close()
    }
  })
})

describe('embedded facilitator start-up', () => {
  it('starts with an unreachable RPC and answers writes with 503', async () => {
    const port = await freePort()
    const pind = await startPind({ args: ['--rpc-url', `http://127.0.0.1:${port}`, '--asset', chain.usdc, '--pay-to', chain.payTo], env: { PIND_SETTLER_KEY: chain.settlerKey } })
    try {
      const r = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'x-upload-size': '10' }, body: 'x' })
      expect(r.status).toBe(503)
      expect(r.headers.get('retry-after')).toBeTruthy()
    } finally {
      await pind.stop()
    }
  })

  it('refuses to start when the asset is not the configured EIP-3009 token', async () => {
    for (const [args, pattern] of [
      [['--asset-name', 'Tether USD'], /expected EIP-712 name "Tether USD"/],
      [['--asset-version', '1'], /expected "1"/],
      [['--asset', chain.payTo], /not an EIP-3009/]
    ] as Array<[string[], RegExp]>) {
      const p = spawnPind(['serve', '--data-dir', tempDir(), '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0', '--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, ...args], { env: { PIND_SETTLER_KEY: chain.settlerKey } })
      let err = ''
      p.stderr?.on('data', (b: Buffer) => { err += b.toString() })
      const code = await new Promise(resolve => p.on('exit', resolve))
      expect(code).toBe(1)
      expect(err).toMatch(pattern)
      expect(err).not.toMatch(new RegExp(chain.settlerKey.slice(2)))
    }
  })
})
