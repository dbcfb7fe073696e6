/**
 * serve collects garbage by itself (--gc-interval, --gc-watermark) against the
 * packaged binary: the blocks of a deleted pin and of an expired one leave the
 * store with no admin command, those of a live pin stay, and the runs show in
 * the metrics and the log. Blocks on disk, or (vitest project s3) in a bucket
 * of a real Ceph RADOS Gateway. Expiry is simulated by moving a pin's
 * pinned_until into the past in the ledger (LMDB is safe to write from a
 * second process).
 */
import { createHash, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { openLedgerEnv } from '../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../src/ledger/lmdb/pins.js'
import { blockstoreUnderTest } from '../helpers/backend.js'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { BINARY, startPind, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

let chain: DevChain
const started: PindProcess[] = []

const MiB = 1024 * 1024
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

interface Uploaded { requestid: string, cid: string, dag_size: number, token: string }

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
})

afterAll(async () => {
  for (const p of started) await p.stop()
  await chain?.stop()
})

async function serve (extra: string[]): Promise<{ pind: PindProcess, metrics: () => Promise<string>, count: () => Promise<number> }> {
  const blocks = await blockstoreUnderTest()
  const c = chainArgs(chain)
  const port = await freePort()
  const pind = await startPind({ binary: BINARY, args: [...c.args, ...blocks.args, '--expiry-grace', '0', '--metrics-listen', `127.0.0.1:${port}`, ...extra], env: { ...c.env, ...blocks.env, PIND_LOG_LEVEL: 'info' } })
  started.push(pind)
  return {
    pind,
    metrics: async () => await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(),
    count: async () => await blocks.count(pind.dataDir)
  }
}

async function upload (pind: PindProcess, bytes: Uint8Array): Promise<Uploaded> {
  const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
  const body = await r.json() as any
  expect(r.status, JSON.stringify(body)).toBe(201)
  return { ...body, token: r.headers.get('x-wallet-auth-token') as string }
}

async function unpin (pind: PindProcess, u: Uploaded): Promise<void> {
  expect((await fetch(`${pind.url}/pins/${u.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${u.token}` } })).status).toBe(202)
}

const value = (text: string, re: RegExp): number => Number(re.exec(text)?.[1] ?? 0)

describe('gc inside serve', () => {
  it('removes the blocks of deleted and expired pins on its interval, with no admin command; a live pin keeps its own', async () => {
    const { pind, metrics, count } = await serve(['--expiry-sweep-interval', '1s', '--gc-interval', '1s'])
    const keptBytes = randomBytes(MiB + 3)
    const kept = await upload(pind, keptBytes)
    const withKept = await count()
    const deleted = await upload(pind, randomBytes(3 * MiB + 1))
    const expiring = await upload(pind, randomBytes(2 * MiB + 5))
    expect(await count()).toBeGreaterThanOrEqual(withKept + 9)

    await unpin(pind, deleted)
    const env = await openLedgerEnv(join(pind.dataDir, 'ledger.mdb'))
    try {
      await new PinLedger(env).renew(expiring.requestid, 0, undefined, () => new Date(Date.now() - 1000))
    } finally {
      await env.close()
    }
    await waitFor(async () => await count() === withKept ? true : undefined, 'the deleted and the expired pin\'s blocks to be collected')

    const r = await fetch(`${pind.url}/ipfs/${kept.cid}`)
    expect(r.status).toBe(200)
    expect(sha(Buffer.from(await r.arrayBuffer()))).toBe(sha(keptBytes))
    const text = await metrics()
    expect(value(text, /^pind_gc_runs_total\{trigger="interval",outcome="done"\} (\d+)/m)).toBeGreaterThanOrEqual(1)
    expect(value(text, /^pind_gc_removed_blocks_total (\d+)/m)).toBeGreaterThanOrEqual(9)
    expect(value(text, /^pind_gc_freed_bytes_total (\d+)/m)).toBe(deleted.dag_size + expiring.dag_size)
    expect(text).toMatch(/^pind_gc_duration_seconds_count \d+/m)
    expect(pind.stderr()).toMatch(/gc done/)
  })

  it('runs as soon as the bytes pins released pass the watermark', async () => {
    const { pind, metrics, count } = await serve(['--gc-interval', '0', '--gc-watermark', String(2 * MiB)])
    const kept = await upload(pind, randomBytes(5000))
    const withKept = await count()
    const small = await upload(pind, randomBytes(MiB - 10))
    const big = await upload(pind, randomBytes(3 * MiB + 1))
    // 1 MiB released: under the watermark, nothing runs
    await unpin(pind, small)
    expect(value(await metrics(), /^pind_gc_unreferenced_bytes_estimate (\d+)/m)).toBe(small.dag_size)
    // 4 MiB: over it
    await unpin(pind, big)
    await waitFor(async () => value(await metrics(), /^pind_gc_runs_total\{trigger="watermark",outcome="done"\} (\d+)/m) >= 1 ? true : undefined, 'a gc run by the watermark')
    expect(await count()).toBe(withKept)
    const text = await metrics()
    expect(value(text, /^pind_gc_runs_total\{trigger="watermark",outcome="done"\} (\d+)/m)).toBe(1)
    expect(value(text, /^pind_gc_runs_total\{trigger="interval",outcome="done"\} (\d+)/m)).toBe(0)
    expect(value(text, /^pind_gc_unreferenced_bytes_estimate (\d+)/m)).toBe(0)
    expect((await fetch(`${pind.url}/ipfs/${kept.cid}`)).status).toBe(200)
  })
})
