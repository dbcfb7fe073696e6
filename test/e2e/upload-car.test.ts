/**
 * CAR uploads end to end: the real pind (bundle) on the dev chain, paid with
 * @x402/fetch. A CAR (its part typed application/vnd.ipld.car, or sent with
 * ?format=car) is pinned as the DAG it holds, served by the gateway, its
 * stray block not kept; a CAR missing a block is refused with a 400 naming
 * it, before the payment settles: nothing charged, nothing kept. Blocks on
 * disk, or (vitest project s3) in a bucket of a real Ceph RADOS Gateway.
 */
import { createHash, randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { blockstoreUnderTest, type BlockstoreUnderTest } from '../helpers/backend.js'
import { carOf, dagOf, type Block } from '../helpers/car.js'
import { chainArgs, payingFetch } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let pind: PindProcess
let blocks: BlockstoreUnderTest

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  blocks = await blockstoreUnderTest()
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args: [...args, ...blocks.args], env: { ...env, ...blocks.env } })
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

const carForm = (bytes: Uint8Array, type = 'application/vnd.ipld.car'): FormData => {
  const form = new FormData()
  form.append('file', new Blob([bytes], { type }), 'dag.car')
  return form
}
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

describe('POST /upload with a CAR', () => {
  it('pins the DAG the CAR holds (its root), priced on the CAR\'s bytes; the gateway serves it; a block the root does not reach is not kept', async () => {
    const content = randomBytes(2_300_000)
    const dag = await dagOf(content)
    const stray = { cid: CID.createV1(raw.code, await sha256.digest(Buffer.from('stray'))), bytes: Buffer.from('stray') }
    const bytes = await carOf([dag.root], [...dag.blocks, stray])
    const pay = payingFetch(chain, chain.payers[0]!.privateKey)
    const r = await pay(`${pind.url}/upload`, { method: 'POST', body: carForm(bytes), headers: { 'x-upload-size': String(bytes.byteLength) } })
    expect(r.status, await r.clone().text()).toBe(201)
    const body = await r.json() as { cid: string, size: number, dag_size: number, requestid: string }
    expect(body.cid).toBe(dag.root.toString())
    expect(body.size).toBe(bytes.byteLength)
    expect(body.dag_size).toBe(dag.blocks.reduce((n, b) => n + b.bytes.byteLength, 0))
    const got = Buffer.from(await (await fetch(`${pind.url}/ipfs/${body.cid}`)).arrayBuffer())
    expect(sha(got)).toBe(sha(content))
    expect((await fetch(`${pind.url}/ipfs/${stray.cid.toString()}?format=raw`)).status).not.toBe(200)
    expect(await blocks.count(pind.dataDir)).toBe(dag.blocks.length)

    // the same CAR as an octet-stream part, said to be a CAR by ?format=car: the same root, another pin
    const again = await pay(`${pind.url}/upload?format=car`, { method: 'POST', body: carForm(bytes, 'application/octet-stream') })
    expect(again.status, await again.clone().text()).toBe(201)
    expect((await again.json() as { cid: string }).cid).toBe(dag.root.toString())
  })

  it('a CAR missing a block of its DAG: 400 naming it, before settlement: nothing charged, nothing kept', async () => {
    const dag = await dagOf(randomBytes(2_300_000))
    const leaves = dag.blocks.filter(b => !b.cid.equals(dag.root))
    const missing = leaves[1] as Block
    const bytes = await carOf([dag.root], dag.blocks.filter(b => b !== missing))
    const payer = chain.payers[1]!
    const before = await usdcBalance(chain, payer.address)
    const stored = await blocks.count(pind.dataDir)
    const r = await payingFetch(chain, payer.privateKey)(`${pind.url}/upload`, { method: 'POST', body: carForm(bytes) })
    expect(r.status).toBe(400)
    const err = await r.json() as { error: { reason: string, details: string } }
    expect(err.error.reason).toBe('BAD_REQUEST')
    expect(err.error.details).toContain(`missing block ${missing.cid.toString()}`)
    expect(err.error.details).toMatch(/nothing was kept or charged/)
    expect(await usdcBalance(chain, payer.address)).toBe(before)
    expect(await blocks.count(pind.dataDir)).toBe(stored)
    expect((await fetch(`${pind.url}/ipfs/${dag.root.toString()}`)).status).not.toBe(200)
  })

  it('with a prepaid ticket: the root\'s DAG pinned, the stray block the upload wrote deleted', async () => {
    const content = randomBytes(1_500_000)
    const dag = await dagOf(content)
    const stray = { cid: CID.createV1(raw.code, await sha256.digest(Buffer.from('stray of a ticket'))), bytes: Buffer.from('stray of a ticket') }
    const bytes = await carOf([dag.root], [stray, ...dag.blocks])
    const bought = await payingFetch(chain, chain.payers[1]!.privateKey)(`${pind.url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': String(bytes.byteLength), 'x-pin-duration-months': '1' } })
    expect(bought.status).toBe(201)
    const { ticket } = await bought.json() as { ticket: string }
    const stored = await blocks.count(pind.dataDir)
    const r = await fetch(`${pind.url}/upload`, { method: 'POST', body: carForm(bytes), headers: { 'x-upload-ticket': ticket, authorization: `Bearer ${bought.headers.get('x-wallet-auth-token') as string}` } })
    expect(r.status, await r.clone().text()).toBe(201)
    const body = await r.json() as { cid: string, dag_size: number }
    expect(body.cid).toBe(dag.root.toString())
    expect(body.dag_size).toBe(dag.blocks.reduce((n, b) => n + b.bytes.byteLength, 0))
    expect(sha(Buffer.from(await (await fetch(`${pind.url}/ipfs/${body.cid}`)).arrayBuffer()))).toBe(sha(content))
    expect(await blocks.count(pind.dataDir)).toBe(stored + dag.blocks.length)
  })

  it('a CAR of the upload limit plus one byte: 413 while it streams, nothing charged or kept', async () => {
    const LIMIT = 104_857_600
    const rawBlock = async (bytes: Uint8Array): Promise<Block> => ({ cid: CID.createV1(raw.code, await sha256.digest(bytes)), bytes })
    const blocksOf = async (last: number): Promise<Block[]> => [...await Promise.all(Array.from({ length: 99 }, async () => await rawBlock(randomBytes(1_048_576)))), await rawBlock(randomBytes(last))]
    // a root that holds them all is not needed: the cap stops the CAR before its DAG is looked at
    let blocksIn = await blocksOf(1_000_000)
    const root = blocksIn[0] as Block
    let bytes = await carOf([root.cid], blocksIn)
    blocksIn = [...blocksIn.slice(0, 99), await rawBlock(randomBytes(1_000_000 + (LIMIT + 1 - bytes.byteLength)))]
    bytes = await carOf([root.cid], blocksIn)
    expect(bytes.byteLength).toBe(LIMIT + 1)
    const payer = chain.payers[1]!
    const before = await usdcBalance(chain, payer.address)
    const stored = await blocks.count(pind.dataDir)
    const r = await payingFetch(chain, payer.privateKey)(`${pind.url}/upload`, { method: 'POST', body: carForm(bytes), headers: { 'x-upload-size': String(LIMIT) } })
    expect(r.status, await r.clone().text()).toBe(413)
    expect(await usdcBalance(chain, payer.address)).toBe(before)
    expect(await blocks.count(pind.dataDir)).toBe(stored)
  })

  it('?format= other than car or directory is a 400 before anything is read', async () => {
    const r = await fetch(`${pind.url}/upload?format=tar`, { method: 'POST', body: carForm(new Uint8Array(10)) })
    expect(r.status).toBe(400)
    expect((await r.json() as { error: { details: string } }).error.details).toMatch(/format may be car .* or directory/)
  })
})
