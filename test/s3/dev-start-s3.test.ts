/**
 * `npm start -- --s3` (scripts/dev-start.mjs --s3, run directly: the bundle is
 * built already, and test/e2e/dev-start.test.ts runs npm start itself): the dev setup with its blocks in a bucket of a
 * throwaway Ceph RADOS Gateway of its own (scripts/s3/). A paid upload lands
 * in that bucket; SIGTERM to npm stops serve, anvil and every Ceph daemon it
 * started; a non-empty PIND_DATA_DIR is refused, never emptied.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { afterAll, describe, expect, it } from 'vitest'
import { s3Client } from '../../scripts/s3/index.mjs'
import { payingFetch, uploadForm } from '../helpers/paying-client.js'
import { alive, killLater, killLeftovers, served, startDev, type DevStart } from '../helpers/dev-start.js'
import { tempDir } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

afterAll(killLeftovers)

const npmStart = (dataDir: string): DevStart =>
  startDev(process.execPath, ['scripts/dev-start.mjs', '--s3', '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0'], dataDir)

describe('npm start -- --s3', () => {
  it('keeps the blocks in a throwaway gateway\'s bucket, and stops serve, anvil and Ceph on SIGTERM', async () => {
    const dataDir = tempDir()
    const npm = npmStart(dataDir)
    const { url, servePid, chain } = await served(npm, dataDir, 'npm start -- --s3 to serve', 120_000)
    const dev = JSON.parse(readFileSync(join(dataDir, 'dev-s3.json'), 'utf8')) as { endpoint: string, bucket: string, dir: string, pids: Record<string, number> }
    const cephPids = Object.values(dev.pids)
    killLater(...cephPids)
    expect(cephPids.length).toBe(3) // mon, osd, rgw
    expect(npm.out()).toMatch(/blocks:\s+blocks in S3 bucket pind-dev/)
    const health = await (await fetch(`${url}/health`)).json() as any
    expect(health.checks.blockstore.ok).toBe(true)

    // a paid upload with the dev payer lands in the bucket
    const r = await payingFetch(chain, chain.payers[0].privateKey)(`${url}/upload`, { method: 'POST', body: uploadForm(randomBytes(1_200_000)) })
    expect(r.status).toBe(201)
    const client = s3Client(JSON.parse(readFileSync(join(dev.dir, 's3.json'), 'utf8')))
    const listed = await client.send(new ListObjectsV2Command({ Bucket: dev.bucket }))
    client.destroy()
    expect(listed.KeyCount).toBe(3) // two leaves and a root

    npm.kill('SIGTERM')
    await npm.exited
    await waitFor(() => [servePid, chain.pid as number, ...cephPids].every(p => !alive(p)) ? true : undefined, 'serve, anvil and the Ceph daemons to stop', 30_000)
    await expect(fetch(`${url}/health`)).rejects.toThrow()
  })

  it('refuses a PIND_DATA_DIR that is not empty, and leaves it as it was', async () => {
    const dataDir = tempDir()
    writeFileSync(join(dataDir, 'keep.txt'), 'mine')
    const npm = npmStart(dataDir)
    expect(await npm.exited).toBe(2)
    expect(npm.out()).toMatch(/is not empty; the throwaway bucket lives in RAM/)
    expect(readFileSync(join(dataDir, 'keep.txt'), 'utf8')).toBe('mine')
  })
})
