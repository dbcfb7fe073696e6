/**
 * `pind gc` (the packaged binary) running again and again through the admin
 * socket of a running binary while paid uploads and unpins go on: no block
 * of a live pin is ever removed (every acknowledged pin hash-checks through
 * the gateway afterwards), and the bytes freed over all runs are exactly the
 * bytes of the unpinned uploads. Blocks on disk, or (vitest project s3) in a
 * bucket of a real Ceph RADOS Gateway, listed and deleted in pages and batches.
 */
import { createHash, randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { blockstoreUnderTest, type BlockstoreUnderTest } from '../helpers/backend.js'
import { BINARY, runPind, startPind, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let pind: PindProcess
let blocks: BlockstoreUnderTest

beforeAll(async () => {
  chain = await startDevChain({ payers: 3 })
  blocks = await blockstoreUnderTest()
  const { args, env } = chainArgs(chain)
  pind = await startPind({ binary: BINARY, args: [...args, ...blocks.args], env: { ...env, ...blocks.env } })
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

describe('gc beside uploads', () => {
  it('never removes a live block and frees exactly the unpinned bytes', async () => {
    const live: Array<{ cid: string, hash: string }> = []
    let unpinnedBytes = 0
    let uploading = true

    const worker = async (payer: number): Promise<void> => {
      const pay = payingFetch(chain, chain.payers[payer]!.privateKey)
      for (let i = 0; i < 6; i++) {
        const bytes = randomBytes(1024 * 1024 + 1000 * payer + i) // two blocks + a root each
        const r = await pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
        expect(r.status).toBe(201)
        const body = await r.json() as any
        if (i % 2 === 1) {
          const del = await fetch(`${pind.url}/pins/${body.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${r.headers.get('x-wallet-auth-token')}` } })
          expect(del.status).toBe(202)
          unpinnedBytes += body.dag_size
        } else {
          live.push({ cid: body.cid, hash: sha(bytes) })
        }
      }
    }

    let freed = 0
    let runs = 0
    const collector = async (): Promise<void> => {
      while (uploading) {
        const r = await runPind(['gc', '--json', '--data-dir', pind.dataDir], { binary: BINARY, env: blocks.env })
        expect(r.code, r.err).toBe(0)
        freed += JSON.parse(r.out).freedBytes
        runs++
      }
    }

    const gcLoop = collector()
    await Promise.all([worker(0), worker(1), worker(2)])
    uploading = false
    await gcLoop
    const last = await runPind(['gc', '--json', '--data-dir', pind.dataDir], { binary: BINARY, env: blocks.env })
    freed += JSON.parse(last.out).freedBytes
    // what is left in the store is exactly what the live pins reference
    const dry = JSON.parse((await runPind(['gc', '--dry-run', '--json', '--data-dir', pind.dataDir], { binary: BINARY, env: blocks.env })).out)
    expect(dry).toMatchObject({ removedBlocks: 0, scannedBlocks: dry.markedBlocks })
    expect(await blocks.count(pind.dataDir)).toBe(dry.markedBlocks)

    expect(runs).toBeGreaterThan(1)
    expect(freed).toBe(unpinnedBytes)
    expect(live.length).toBe(9)
    for (const p of live) {
      const body = Buffer.from(await (await fetch(`${pind.url}/ipfs/${p.cid}`)).arrayBuffer())
      expect(sha(body)).toBe(p.hash)
    }
  })
})
