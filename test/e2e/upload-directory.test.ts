/**
 * Directory uploads end to end (POST /upload?format=directory): the real pind
 * (bundle) on the dev chain, paid with @x402/fetch. Every `file` part, named by
 * its path, goes into one UnixFS directory with the unixfs-v1-2025 profile:
 * the root is the one the client computed before paying (ipfs-unixfs-importer
 * with the profile), each file is served under its path, a large directory is
 * HAMT-sharded, and a bad path is a 400 before anything is charged. Blocks on
 * disk, or (vitest project s3) in a bucket of a real Ceph RADOS Gateway.
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import * as dagPb from '@ipld/dag-pb'
import { MemoryBlockstore } from 'blockstore-core'
import { UnixFS } from 'ipfs-unixfs'
import { importer } from 'ipfs-unixfs-importer'
import { CID } from 'multiformats/cid'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { blockstoreUnderTest, type BlockstoreUnderTest } from '../helpers/backend.js'
import { carOf, dagOf } from '../helpers/car.js'
import { chainArgs, payingFetch } from '../helpers/paying-client.js'
import { ROOT, startPind, tempDir, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let pind: PindProcess
let blocks: BlockstoreUnderTest

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  blocks = await blockstoreUnderTest()
  const { args, env } = chainArgs(chain)
  // the subdomain gateway on: uploads name the site's origin too
  pind = await startPind({ args: [...args, ...blocks.args, '--gateway-domain', 'localhost'], env: { ...env, ...blocks.env } })
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

type Files = Array<[string, Uint8Array]>

const form = (files: Files): FormData => {
  const f = new FormData()
  for (const [path, bytes] of files) f.append('file', new Blob([bytes]), path)
  return f
}

/** the root and each file's CID as a client computes them before paying: the profile's reference implementation */
async function expected (files: Files): Promise<{ root: string, cids: Map<string, string> }> {
  const cids = new Map<string, string>()
  let root = ''
  for await (const e of importer(files.map(([path, bytes]) => ({ path, content: [bytes] })), new MemoryBlockstore(), { profile: 'unixfs-v1-2025', wrapWithDirectory: true })) {
    if (e.path === '') root = e.cid.toString()
    else cids.set(e.path ?? '', e.cid.toString())
  }
  return { root, cids }
}

describe('POST /upload?format=directory', () => {
  it('pins one directory of every part, its root the one computed before paying; each file served under its path', async () => {
    const files: Files = [
      ['index.html', Buffer.from('<!doctype html><title>site</title><link rel=stylesheet href=css/site.css>')],
      ['css/site.css', Buffer.from('body { color: #333 }')],
      ['img/photo.bin', randomBytes(1_500_000)],
      ['empty.txt', new Uint8Array(0)]
    ]
    const want = await expected(files)
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload?format=directory`, { method: 'POST', body: form(files) })
    expect(r.status, await r.clone().text()).toBe(201)
    const body = await r.json() as { cid: string, size: number, files: Array<{ path: string, cid: string, size: number }> }
    expect(body.cid).toBe(want.root)
    expect(body.size).toBe(files.reduce((n, [, b]) => n + b.byteLength, 0))
    expect(body.files).toEqual(files.map(([path, bytes]) => ({ path, cid: want.cids.get(path), size: bytes.byteLength })))
    for (const [path, bytes] of files) {
      const got = await fetch(`${pind.url}/ipfs/${body.cid}/${path}`)
      expect(got.status, path).toBe(200)
      expect(Buffer.from(await got.arrayBuffer()).equals(Buffer.from(bytes)), path).toBe(true)
    }
  })

  it('a large directory is HAMT-sharded, as the profile says, and still the client\'s root', async () => {
    const files: Files = Array.from({ length: 3_000 }, (_, i) => [`entry-with-a-rather-long-name-so-that-its-links-add-up-past-256-KiB-${String(i).padStart(5, '0')}.txt`, Buffer.from(`file ${i}`)])
    const want = await expected(files)
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload?format=directory`, { method: 'POST', body: form(files) })
    expect(r.status, await r.clone().text()).toBe(201)
    const { cid } = await r.json() as { cid: string }
    expect(cid).toBe(want.root)
    const rootBlock = new Uint8Array(await (await fetch(`${pind.url}/ipfs/${cid}?format=raw`)).arrayBuffer())
    expect(UnixFS.unmarshal(dagPb.decode(rootBlock).Data as Uint8Array).type).toBe('hamt-sharded-directory')
    const one = files[1_234] as [string, Uint8Array]
    expect(Buffer.from(await (await fetch(`${pind.url}/ipfs/${cid}/${one[0]}`)).arrayBuffer()).toString()).toBe('file 1234')
    expect(CID.parse(cid).version).toBe(1)
  })

  it('scripts/upload.mjs uploads a directory (every file by its path) and a CAR, and prints the root and the site\'s URL', async () => {
    const dir = tempDir('pind-upload-dir-')
    const files: Files = [['index.html', Buffer.from('<h1>hello</h1>')], ['docs/a.txt', Buffer.from('a')], ['docs/deep/b.bin', randomBytes(70_000)]]
    for (const [path, bytes] of files) {
      mkdirSync(dirname(join(dir, 'site', path)), { recursive: true })
      writeFileSync(join(dir, 'site', path), bytes)
    }
    const want = await expected(files)
    const env = { ...process.env, PIND_URL: pind.url, PAYER_KEY: chain.payers[0]!.privateKey, PIND_USDC: chain.usdc }
    const site = spawnSync(process.execPath, [join(ROOT, 'scripts/upload.mjs'), join(dir, 'site')], { env, encoding: 'utf8' })
    expect(site.status, site.stderr).toBe(0)
    expect(site.stdout).toMatch(new RegExp(`^cid: +${want.root}$`, 'm'))
    expect(site.stdout).toMatch(new RegExp(`^gateway url: +${pind.url}/ipfs/${want.root}/$`, 'm'))
    expect(site.stdout).toMatch(/^files: +3$/m)
    expect(site.stdout).toMatch(new RegExp(`^site url: +http://${want.root}\\.ipfs\\.localhost:${new URL(pind.url).port}/$`, 'm'))

    const dag = await dagOf(randomBytes(1_200_000))
    writeFileSync(join(dir, 'dag.car'), await carOf([dag.root], dag.blocks))
    const car = spawnSync(process.execPath, [join(ROOT, 'scripts/upload.mjs'), join(dir, 'dag.car')], { env, encoding: 'utf8' })
    expect(car.status, car.stderr).toBe(0)
    expect(car.stdout).toMatch(new RegExp(`^cid: +${dag.root.toString()}$`, 'm'))
  })

  it('the agent card and llms.txt name where sites are served (--gateway-domain)', async () => {
    const origin = `http://{cid}.ipfs.localhost:${new URL(pind.url).port}/`
    expect(await (await fetch(`${pind.url}/llms.txt`)).text()).toContain(`A directory as a website: \`${origin}\``)
    expect(JSON.stringify(await (await fetch(`${pind.url}/.well-known/agent-card.json`)).json())).toContain(`served at ${origin}`)
  })

  it('a path over 4 KB, or more files than the limit (100,000 empty ones sent): 400 before anything is charged', async () => {
    const payer = chain.payers[1]!
    const pay = payingFetch(chain, payer.privateKey)
    const before = await usdcBalance(chain, payer.address)
    const long = await pay(`${pind.url}/upload?format=directory`, { method: 'POST', body: form([[`${'d/'.repeat(2100)}f.txt`, Buffer.from('x')]]) })
    expect(long.status).toBe(400)
    expect((await long.json() as { error: { details: string } }).error.details).toMatch(/is longer than 4096 bytes/)
    const many = await pay(`${pind.url}/upload?format=directory`, { method: 'POST', body: form(Array.from({ length: 100_000 }, (_, i) => [`f${i}`, new Uint8Array(0)])) })
    expect(many.status).toBe(400)
    expect((await many.json() as { error: { details: string } }).error.details).toMatch(/more than 10000 .*files/)
    expect(await usdcBalance(chain, payer.address)).toBe(before)
  })

  it('a path that climbs out, is absolute, empty inside, sent twice or both file and directory: 400 naming it, nothing charged or kept', async () => {
    const payer = chain.payers[1]!
    const pay = payingFetch(chain, payer.privateKey)
    const before = await usdcBalance(chain, payer.address)
    const stored = await blocks.count(pind.dataDir)
    const cases: Array<[Files, RegExp]> = [
      [[['a.txt', Buffer.from('a')], ['../etc/passwd', Buffer.from('x')]], /the path "..\/etc\/passwd" has a ".." segment/],
      [[['/abs.txt', Buffer.from('x')]], /the path "\/abs.txt" is absolute/],
      [[['a//b.txt', Buffer.from('x')]], /has an empty segment/],
      [[['a.txt', Buffer.from('a')], ['a.txt', Buffer.from('b')]], /the path "a.txt" is sent twice/],
      [[['a', Buffer.from('a')], ['a/b.txt', Buffer.from('b')]], /is inside "a", which is a file/]
    ]
    for (const [files, message] of cases) {
      const r = await pay(`${pind.url}/upload?format=directory`, { method: 'POST', body: form(files) })
      expect(r.status).toBe(400)
      expect((await r.json() as { error: { details: string } }).error.details).toMatch(message)
    }
    expect(await usdcBalance(chain, payer.address)).toBe(before)
    expect(await blocks.count(pind.dataDir)).toBe(stored)
  })
})
