/**
 * Retries with backoff, set in one place (S3_TUNING): the S3 backend talks to
 * the run's real Ceph RADOS Gateway through a loopback proxy that answers
 * 503 SlowDown (what S3 sends when it throttles) to the next N requests.
 * A few failures are retried away and never mark the bucket down; more than
 * the attempts allow make the request fail with 503 (StorageUnavailableError),
 * mark the bucket down (no request is sent meanwhile) and the probe brings it
 * back by itself once the store answers; every attempt that reached the
 * store is one request in the metrics' sense (the SDK's retries inside one).
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawCid } from '../../scripts/peer/index.mjs'
import { StorageUnavailableError } from '../../src/ipfs/block-backend.js'
import { openS3Backend } from '../../src/ipfs/open-backend.js'
import type { S3Backend } from '../../src/ipfs/s3-backend.js'
import { S3_TUNING, type S3Outcome } from '../../src/ipfs/s3-client.js'
import { silentLogger } from '../../src/kernel/log.js'
import { newBucket, s3, S3_PREFIX } from '../helpers/backend.js'
import { waitFor } from '../helpers/ports.js'
import { startThrottlingProxy, type ThrottlingProxy } from '../helpers/s3-proxy.js'

let proxy: ThrottlingProxy
let seen = 0
let backend: S3Backend
const observed: Array<{ operation: string, outcome: S3Outcome }> = []

beforeAll(async () => {
  proxy = await startThrottlingProxy(s3().endpoint, () => { seen++ })
  const server = s3()
  backend = await openS3Backend({ endpoint: proxy.endpoint, bucket: await newBucket(), prefix: S3_PREFIX, region: server.region, forcePathStyle: true },
    { s3AccessKeyId: server.accessKeyId, s3SecretAccessKey: server.secretAccessKey, s3CacheSize: 0 },
    { blocksDir: '/nonexistent', cacheDir: '/nonexistent', log: silentLogger, observer: (operation, _s, outcome) => { observed.push({ operation, outcome }) }, requireReachable: true })
})

afterAll(async () => {
  await backend?.close()
  await proxy?.close()
})

describe('S3 retries', () => {
  it('retries 503 SlowDown with backoff within one request; past its attempts the bucket is down, then back by itself', async () => {
    // two throttled answers: the third attempt stores the block, the bucket never counts as down
    const b1 = randomBytes(5000)
    const c1 = rawCid(b1)
    proxy.failNext = 2
    seen = 0
    observed.length = 0
    await backend.blockstore.put(c1, b1)
    expect(seen).toBe(3)
    expect(backend.writable()).toBe(true)
    expect(observed).toEqual([{ operation: 'PutObject', outcome: 'ok' }])
    expect(Buffer.from(await backend.read(c1) as Uint8Array).equals(b1)).toBe(true)

    // more throttling than the attempts allow: 503 for the caller, the bucket is marked down
    const b2 = randomBytes(5000)
    const c2 = rawCid(b2)
    proxy.failNext = 1000
    seen = 0
    await expect(backend.blockstore.put(c2, b2)).rejects.toBeInstanceOf(StorageUnavailableError)
    expect(seen).toBe(S3_TUNING.maxAttempts)
    expect(backend.writable()).toBe(false)
    expect(observed.at(-1)).toEqual({ operation: 'PutObject', outcome: 'unavailable' })
    // while it is down nothing is sent but the probe; reads fail at once with 503
    const before = seen
    await expect(backend.read(c1)).rejects.toBeInstanceOf(StorageUnavailableError)
    expect(seen - before).toBeLessThanOrEqual(S3_TUNING.maxAttempts) // at most one probe meanwhile

    // the store answers again: the probe finds it, writes go through
    proxy.failNext = 0
    await waitFor(() => backend.writable() ? true : undefined, 'the probe to find the bucket again', 20_000)
    await backend.blockstore.put(c2, b2)
    expect(Buffer.from(await backend.read(c2) as Uint8Array).equals(b2)).toBe(true)
  })
})
