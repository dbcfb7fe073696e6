/**
 * Graceful shutdown: SIGTERM while a paid upload is still streaming lets it
 * finish (201, pinned), refuses nothing already accepted, then exits 0.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, signChallenge, uploadChallenge } from '../helpers/paying-client.js'
import { startPind } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

let chain: DevChain
beforeAll(async () => { chain = await startDevChain() })
afterAll(async () => { await chain?.stop() })

it('finishes an in-flight upload after SIGTERM, then exits 0', async () => {
  const { args, env } = chainArgs(chain)
  const pind = await startPind({ args, env: { ...env, PIND_LOG_LEVEL: 'info' } })
  const payer = chain.payers[0]!
  const header = await signChallenge(chain, payer.privateKey, await uploadChallenge(pind.url, 2_000_000))
  const bytes = randomBytes(2_000_000 - 200)
  const boundary = 'shutdown'
  let release!: () => void
  const gate = new Promise<void>(resolve => { release = resolve })
  const body = new ReadableStream<Uint8Array>({
    async start (c) {
      c.enqueue(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x"\r\n\r\n`))
      c.enqueue(bytes.subarray(0, 500_000))
      await gate
      c.enqueue(bytes.subarray(500_000))
      c.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`))
      c.close()
    }
  })
  const pending = fetch(`${pind.url}/upload`, { method: 'POST', body, duplex: 'half', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-upload-size': '2000000', 'payment-signature': header } } as RequestInit)
  await waitFor(() => pind.stderr().includes('"msg":"payment verified"') ? true : undefined, 'the upload to be under way')
  const exited = pind.stop('SIGTERM')
  await waitFor(() => pind.stderr().includes('"msg":"stopping"') ? true : undefined, 'shutdown to begin')
  release()
  const r = await pending
  expect(r.status).toBe(201)
  expect((await r.json() as any).status).toBe('pinned')
  expect(await exited).toBe(0)
})

it('with --shutdown-drain, answers /ready 503 (draining) after SIGTERM while still serving the rest with Connection: close, then exits 0', async () => {
  const { args, env } = chainArgs(chain)
  const pind = await startPind({ args: [...args, '--shutdown-drain', '3'], env })
  expect((await fetch(`${pind.url}/ready`)).status).toBe(200)
  const exited = pind.stop('SIGTERM')
  const ready = await waitFor(async () => {
    const r = await fetch(`${pind.url}/ready`)
    return r.status === 503 ? r : undefined
  }, '/ready to answer 503')
  expect((await ready.json() as { error: { details: string } }).error.details).toMatch(/^draining/)
  expect(ready.headers.get('connection')).toBe('close')
  // the rest is served as before, on a new connection too
  const health = await fetch(`${pind.url}/health`)
  expect(health.status).toBe(200)
  expect(health.headers.get('connection')).toBe('close')
  expect(await exited).toBe(0)
  expect(pind.stderr()).toContain('"msg":"draining"')
})
