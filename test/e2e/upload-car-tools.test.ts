/**
 * CARs made by tools no one here wrote, uploaded to the real pind (bundle) on
 * the dev chain and paid with @x402/fetch: the `ipfs-car` CLI (`ipfs-car
 * pack`, what people pack sites with; @ipld/unixfs underneath) and a stock
 * Helia node (`createHelia`, @helia/unixfs, @helia/car's export). Each pin's
 * root is the one the tool reported, and every file comes back through
 * pind's gateway byte for byte. And the same tree sent as pind's own
 * directory upload (?format=directory, IPIP-499 unixfs-v1-2025): the same
 * root as `ipfs-car pack`, except where the two decide differently to shard
 * a directory (ipfs-car: above 1,000 entries; the profile: above 256 KiB of
 * estimated block bytes). (@ipld/car's writer is covered by upload-car.test.ts.)
 * Blocks on disk only: the storage backends are covered by upload-car.test.ts.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { car } from '@helia/car'
import { unixfs } from '@helia/unixfs'
import * as dagPb from '@ipld/dag-pb'
import { MemoryBlockstore } from 'blockstore-core'
import { MemoryDatastore } from 'datastore-core'
import { createHelia } from 'helia'
import { UnixFS } from 'ipfs-unixfs'
import type { CID } from 'multiformats/cid'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch } from '../helpers/paying-client.js'
import { ROOT, startPind, tempDir, type PindProcess } from '../helpers/pind.js'

const run = promisify(execFile)
/** the CLI as npm installs it (node_modules/.bin), on the pinned Node */
const IPFS_CAR = join(ROOT, 'node_modules/.bin/ipfs-car')
const ipfsCar = async (...args: string[]): Promise<string> => (await run(process.execPath, [IPFS_CAR, ...args], { timeout: 60_000 })).stdout.trim()

let chain: DevChain
let pind: PindProcess

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args, env })
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

type Files = Array<[string, Uint8Array]>

/** writes the files under a fresh directory; returns it */
function tree (files: Files): string {
  const dir = join(tempDir('pind-car-tools-'), 'site')
  for (const [path, bytes] of files) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), bytes)
  }
  return dir
}

/** uploads a CAR (paid), resolves with the pinned root */
async function uploadCar (bytes: Uint8Array): Promise<string> {
  const form = new FormData()
  form.append('file', new Blob([bytes], { type: 'application/vnd.ipld.car' }), 'site.car')
  const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: form })
  expect(r.status, await r.clone().text()).toBe(201)
  return (await r.json() as { cid: string }).cid
}

/** uploads the files as pind's own directory upload (paid), resolves with the root */
async function uploadDirectory (files: Files): Promise<string> {
  const form = new FormData()
  for (const [path, bytes] of files) form.append('file', new Blob([bytes]), path)
  const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload?format=directory`, { method: 'POST', body: form })
  expect(r.status, await r.clone().text()).toBe(201)
  return (await r.json() as { cid: string }).cid
}

/** every file, fetched through pind's gateway under the root, equals the original */
async function expectServed (root: string, files: Files): Promise<void> {
  for (const [path, bytes] of files) {
    const r = await fetch(`${pind.url}/ipfs/${root}/${path}`)
    expect(r.status, path).toBe(200)
    expect(Buffer.from(await r.arrayBuffer()).equals(Buffer.from(bytes)), `${path}: the bytes served differ`).toBe(true)
  }
}

/** the UnixFS type of a root as pind serves its block */
async function unixfsType (root: string): Promise<string> {
  const block = new Uint8Array(await (await fetch(`${pind.url}/ipfs/${root}?format=raw`)).arrayBuffer())
  return UnixFS.unmarshal(dagPb.decode(block).Data as Uint8Array).type
}

/** a site: nested folders, a file of three 1 MiB chunks (a balanced DAG), an empty file */
const site = (): Files => [
  ['index.html', Buffer.from('<!doctype html><title>site</title><link rel=stylesheet href=css/site.css>')],
  ['css/site.css', Buffer.from('body { color: #333 }')],
  ['css/vendor/reset.css', Buffer.from('* { margin: 0 }')],
  ['img/photo.bin', randomBytes(2_500_000)],
  ['docs/a/b/c/deep.txt', Buffer.from('deep')],
  ['empty.txt', new Uint8Array(0)]
]

describe('CARs packed by ipfs-car (the CLI)', () => {
  it('a site with nested folders: pinned at the root ipfs-car printed (and `ipfs-car roots` reads), every file served as packed; pind\'s own directory upload of it: the same root', async () => {
    const files = site()
    const dir = tree(files)
    const out = join(dirname(dir), 'site.car')
    const printed = await ipfsCar('pack', dir, '--output', out)
    expect(printed).toMatch(/^baf[a-z2-7]+$/)
    expect(await ipfsCar('roots', out)).toBe(printed)
    const root = await uploadCar(readFileSync(out))
    expect(root).toBe(printed)
    await expectServed(root, files)
    // the same tree as a directory upload: ipfs-car's layout (raw leaves, 1 MiB chunks, 1,024 wide, CIDv1) is the profile's
    expect(await uploadDirectory(files)).toBe(printed)
  })

  it('a single file, --no-wrap: the root is the file itself, served whole', async () => {
    const bytes = randomBytes(1_300_000)
    const dir = tempDir('pind-car-tools-')
    writeFileSync(join(dir, 'one.bin'), bytes)
    const printed = await ipfsCar('pack', join(dir, 'one.bin'), '--no-wrap', '--output', join(dir, 'one.car'))
    expect(await ipfsCar('roots', join(dir, 'one.car'))).toBe(printed)
    const root = await uploadCar(readFileSync(join(dir, 'one.car')))
    expect(root).toBe(printed)
    expect(await unixfsType(root)).toBe('file')
    const got = await fetch(`${pind.url}/ipfs/${root}`)
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true)
  })

  it('1,001 entries: ipfs-car HAMT-shards the directory, pind serves its files; pind\'s directory upload keeps it flat (under 256 KiB), so its root differs', async () => {
    const files: Files = Array.from({ length: 1_001 }, (_, i) => [`f${String(i).padStart(4, '0')}.txt`, Buffer.from(`file ${i}`)])
    const dir = tree(files)
    const out = join(dirname(dir), 'many.car')
    const printed = await ipfsCar('pack', dir, '--output', out)
    const root = await uploadCar(readFileSync(out))
    expect(root).toBe(printed)
    expect(await unixfsType(root)).toBe('hamt-sharded-directory')
    // every 20th file and the last (a path through a directory this size costs the gateway ~15-20 ms here)
    await expectServed(root, files.filter((_, i) => i % 20 === 0 || i === files.length - 1))
    const own = await uploadDirectory(files)
    expect(await unixfsType(own)).toBe('directory')
    expect(own).not.toBe(printed)
  })
})

describe('a CAR exported by a stock Helia node', () => {
  it('createHelia (no network), @helia/unixfs addAll, @helia/car export: pinned at Helia\'s root, every file served', async () => {
    // a stock node that reaches nothing: no listen address, no transport, no discovery, no delegated routers or gateways
    const helia = await createHelia({
      blockstore: new MemoryBlockstore(),
      datastore: new MemoryDatastore(),
      http: { delegatedRouters: [], recursiveGateways: [] },
      libp2p: { addresses: { listen: [] }, transports: [], peerDiscovery: [], services: {} }
    })
    let root: CID | undefined
    const chunks: Uint8Array[] = []
    const files = site()
    try {
      await helia.start()
      for await (const e of unixfs(helia).addAll(files.map(([path, content]) => ({ path, content })), { wrapWithDirectory: true })) {
        if (e.path === '') root = e.cid
      }
      expect(root).toBeDefined()
      for await (const c of car(helia).export(root as CID, { offline: true })) chunks.push(c)
    } finally {
      await helia.stop()
    }
    const pinned = await uploadCar(Buffer.concat(chunks))
    expect(pinned).toBe(root?.toString())
    await expectServed(pinned, files)
  })
})
