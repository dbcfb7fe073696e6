/**
 * The S3 endpoint goes away in the middle of an upload with a prepaid ticket
 * (a radosgw of the run's Ceph cluster that only this file uses is killed
 * while the body streams and its blocks are being PUT), then comes back: the
 * upload answers 503 with Retry-After, the ticket is not used, and once the
 * endpoint answers again the same ticket uploads the file; the blocks the
 * failed upload wrote are garbage for gc. Denied content is refused (451) as
 * a paid upload's is, and leaves the ticket usable too.
 */
import { createHash, randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid } from '../../scripts/peer/index.mjs'
import { extraGateway, type Gateway } from '../../scripts/s3/index.mjs'
import { bucketKeys, newBucket, s3, S3_PREFIX } from '../helpers/backend.js'
import { chainArgs, payingFetch } from '../helpers/paying-client.js'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { openUpload, uploadWithTicket } from '../helpers/ticket-upload.js'

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')
const MiB = 1024 * 1024

let chain: DevChain
let gateway: Gateway
let bucket: string
let pind: PindProcess
const env = (): Record<string, string> => ({ PIND_S3_ACCESS_KEY_ID: s3().accessKeyId, PIND_S3_SECRET_ACCESS_KEY: s3().secretAccessKey })

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  gateway = await extraGateway(s3().dir, `k${process.pid}`)
  bucket = await newBucket()
  const { args, env: chainEnv } = chainArgs(chain)
  pind = await startPind({ args: [...args, '--blockstore', 's3', '--s3-endpoint', gateway.endpoint, '--s3-bucket', bucket, '--s3-force-path-style', '--rate-limit-unpaid', '0'], env: { ...chainEnv, ...env() } })
})

afterAll(async () => {
  await pind?.stop()
  await gateway?.start().catch(() => {})
  await gateway?.stop()
  await chain?.stop()
})

async function buy (size: number): Promise<{ ticket: string, token: string }> {
  const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': String(size) } })
  const body = await r.json() as any
  expect(r.status, JSON.stringify(body)).toBe(201)
  return { ticket: body.ticket, token: r.headers.get('x-wallet-auth-token') as string }
}

describe('uploads with a ticket when the store fails or the content is denied', () => {
  it('a store outage mid-upload answers 503 and leaves the ticket usable once the store is back', async () => {
    const t = await buy(8 * MiB)
    const u = openUpload(pind.url, { 'x-upload-ticket': t.ticket, authorization: `Bearer ${t.token}` })
    await u.write(randomBytes(3 * MiB))
    await waitFor(async () => (await bucketKeys(bucket, S3_PREFIX)).length >= 2 ? true : undefined, 'blocks of the upload in the bucket')
    await gateway.stop()
    // the rest of the body: the next PUTs fail (after the client's retries), and the upload with them
    const rest = randomBytes(5 * MiB)
    void u.write(rest).then(() => { u.end() }, () => {})
    const r = await u.response
    expect(r.status, JSON.stringify(r.body)).toBe(503)
    expect(r.headers['retry-after']).toBeDefined()
    expect(r.body.error.details).toMatch(/ticket was not used/)

    await gateway.start()
    const bytes = randomBytes(8 * MiB)
    const ok = await waitFor(async () => {
      const again = await uploadWithTicket(pind.url, t.ticket, t.token, bytes)
      if (again.status === 503) return undefined
      return again
    }, 'an upload with the same ticket once the store is back', 60_000)
    expect(ok.status, JSON.stringify(ok.body)).toBe(201)
    const got = await fetch(`${pind.url}/ipfs/${ok.body.cid}`)
    expect(sha(Buffer.from(await got.arrayBuffer()))).toBe(sha(bytes))
    // the failed upload's blocks are garbage: after gc the bucket holds the pinned file's blocks only
    const gc = await runPind(['gc', '--json', '--data-dir', pind.dataDir], { env: env() })
    expect(gc.code, gc.err).toBe(0)
    expect(JSON.parse(gc.out).removedBlocks).toBeGreaterThanOrEqual(2)
    expect((await bucketKeys(bucket, S3_PREFIX)).length).toBe(JSON.parse(gc.out).markedBlocks)
  })

  it('denied content is refused with 451 and the ticket stays usable', async () => {
    const denied = randomBytes(300_000)
    const add = await runPind(['deny', 'add', rawCid(denied).toString(), '--reason', 'test takedown', '--data-dir', pind.dataDir])
    expect(add.code, add.err).toBe(0)
    const t = await buy(MiB)
    const r = await uploadWithTicket(pind.url, t.ticket, t.token, denied)
    expect(r.status).toBe(451)
    const bytes = randomBytes(300_000)
    const ok = await uploadWithTicket(pind.url, t.ticket, t.token, bytes)
    expect(ok.status).toBe(201)
  })
})
