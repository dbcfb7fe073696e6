/**
 * Issue 13, findings 2, 10 and 14: content crafted to get something for
 * nothing, against the real server (bundle) on a real chain, with a real
 * origin peer (scripts/peer) holding the crafted blocks.
 *
 * 2.  Pins of dag-cbor, dag-json and json DAGs (and sha2-512 blocks), which
 *     pind accepts and is paid for, must complete and be served (gateway and
 *     trustless CAR); a DAG that links to a codec pind cannot walk must fail
 *     at once, saying why, instead of being retried for a day.
 * 10. A UnixFS file root that links one 1 MiB leaf 40,000 times, declaring
 *     1 byte per link: 2 MB of blocks, a 41.9 GB file. It must not be quoted
 *     at the minimum, and hidden under a directory (so its root does not
 *     give it away) it must not be pinned for the minimum and then served.
 * 14. Identity CIDs are content in the URL that nobody pinned or paid for:
 *     only small ones are served, and `?filename=a.pdf` must not turn HTML
 *     bytes into an inline PDF.
 */
import { randomBytes } from 'node:crypto'
import { CarReader } from '@ipld/car'
import * as dagCbor from '@ipld/dag-cbor'
import * as dagJson from '@ipld/dag-json'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import type { BlockCodec } from 'multiformats/codecs/interface'
import * as json from 'multiformats/codecs/json'
import { identity } from 'multiformats/hashes/identity'
import { sha256, sha512 } from 'multiformats/hashes/sha2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid, startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

let chain: DevChain
let pind: PindProcess
let origin: Peer
let pay: typeof fetch

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  const { args, env } = chainArgs(chain)
  origin = await startPeer()
  pind = await startPind({ args: [...args, '--pin-probe-timeout', '3s', '--pin-stall-timeout', '3s'], env })
  pay = payingFetch(chain, chain.payers[0]!.privateKey)
})

afterAll(async () => {
  await pind?.stop()
  await origin?.stop()
  await chain?.stop()
})

const postPin = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

async function put<T> (codec: BlockCodec<number, T>, value: T): Promise<CID> {
  const bytes = codec.encode(value)
  const cid = CID.createV1(codec.code, await sha256.digest(bytes))
  await origin.putBlock(cid, bytes)
  return cid
}

async function putRaw (bytes: Uint8Array): Promise<CID> {
  const cid = rawCid(bytes)
  await origin.putBlock(cid, bytes)
  return cid
}

/** Pays for a pin of `cid` from the origin; resolves with its status once it is pinned or failed (or the wait ends). */
async function pinAndSettle (cid: CID | string, timeoutMs = 30_000): Promise<any> {
  const r = await pay(`${pind.url}/pins`, postPin({ cid: cid.toString(), origins: origin.multiaddrs() }))
  expect(r.status, await r.clone().text()).toBe(202)
  const token = r.headers.get('x-wallet-auth-token') as string
  const { requestid } = await r.json() as any
  let last: any
  try {
    return await waitFor(async () => {
      last = await (await fetch(`${pind.url}/pins/${requestid}`, { headers: { authorization: `Bearer ${token}` } })).json()
      return last.status === 'pinned' || last.status === 'failed' ? last : undefined
    }, `pin of ${cid.toString()} to settle`, timeoutMs)
  } catch (err) {
    throw new Error(`${(err as Error).message}; last status: ${JSON.stringify(last?.status)} ${JSON.stringify(last?.info?.status_details)}`)
  }
}

async function carBlocks (res: Response): Promise<Map<string, Uint8Array>> {
  const reader = await CarReader.fromBytes(new Uint8Array(await res.arrayBuffer()))
  const out = new Map<string, Uint8Array>()
  for await (const b of reader.blocks()) out.set(b.cid.toString(), b.bytes)
  return out
}

describe('finding 2: pins of dag-cbor, dag-json and json DAGs', () => {
  it('complete, and the gateway serves them as blocks, along paths, and as CARs', async () => {
    const leaf = await putRaw(randomBytes(5000))
    const jsonBlock = await put(json, { hello: 'json', n: 1 })
    const jsonNode = await put(dagJson, { note: 'dag-json', leaf, data: jsonBlock })
    const root = await put(dagCbor, { name: 'dag-cbor root', child: jsonNode, list: [leaf, leaf] })

    for (const [cid, what] of [[root, 'dag-cbor'], [jsonNode, 'dag-json'], [jsonBlock, 'json']] as const) {
      const done = await pinAndSettle(cid)
      expect(done.status, `${what}: ${String(done.info.status_details)}`).toBe('pinned')
    }
    const typed = await fetch(`${pind.url}/ipfs/${root}`)
    expect(typed.status).toBe(200)
    expect(typed.headers.get('content-type')).toBe('application/vnd.ipld.dag-cbor')
    expect(dagCbor.decode(new Uint8Array(await typed.arrayBuffer()))).toMatchObject({ name: 'dag-cbor root' })
    const viaPath = await fetch(`${pind.url}/ipfs/${root}/child?format=dag-json`)
    expect(viaPath.status).toBe(200)
    expect(dagJson.decode(new Uint8Array(await viaPath.arrayBuffer()))).toMatchObject({ note: 'dag-json' })
    const car = await fetch(`${pind.url}/ipfs/${root}?format=car`)
    expect(car.status).toBe(200)
    const blocks = await carBlocks(car)
    expect([...blocks.keys()].sort()).toEqual([root, jsonNode, jsonBlock, leaf].map(String).sort())
    for (const [cid, bytes] of blocks) {
      const c = CID.parse(cid)
      expect(Buffer.from((await sha256.digest(bytes)).digest).equals(c.multihash.digest)).toBe(true)
    }
  })

  it('complete for sha2-512 blocks too', async () => {
    const bytes = randomBytes(3000)
    const cid = CID.createV1(0x55, await sha512.digest(bytes))
    await origin.putBlock(cid, bytes)
    const done = await pinAndSettle(cid)
    expect(done.status, String(done.info.status_details)).toBe('pinned')
    expect(Buffer.from(await (await fetch(`${pind.url}/ipfs/${cid}?format=raw`)).arrayBuffer()).equals(bytes)).toBe(true)
  })

  it('a DAG that links to a codec pind cannot walk fails at once, saying why, instead of being retried', async () => {
    const gitBlock = randomBytes(100)
    const git = CID.createV1(0x78, await sha256.digest(gitBlock))
    await origin.putBlock(git, gitBlock)
    const root = await put(dagCbor, { commit: git })
    const done = await pinAndSettle(root, 20_000)
    expect(done.status).toBe('failed')
    expect(done.info.status_details).toMatch(/codec 0x78/)
    expect(done.info.status_details).not.toMatch(/retry/)
    expect((await fetch(`${pind.url}/ipfs/${root}`)).status).toBe(404)
  })

  it('a root CID of a codec pind cannot walk is refused with 400 before any 402', async () => {
    for (const code of [0x51, 0x78, 0x9999]) {
      const cid = CID.createV1(code, await sha256.digest(randomBytes(8)))
      const r = await fetch(`${pind.url}/pins`, postPin({ cid: cid.toString() }))
      expect(r.status).toBe(400)
      expect((await r.json() as any).error.details).toMatch(new RegExp(`codec 0x${code.toString(16)}`))
    }
    // and a root whose bytes are not what its codec says, once the quote has read it
    for (const code of [dagCbor.code, dagJson.code, json.code]) {
      const junk = Uint8Array.from([0xff, 0xfe, 0x00, ...randomBytes(8)])
      const cid = CID.createV1(code, await sha256.digest(junk))
      await origin.putBlock(cid, junk)
      const r = await fetch(`${pind.url}/pins`, postPin({ cid: cid.toString(), origins: origin.multiaddrs() }))
      expect(r.status, `codec 0x${code.toString(16)}`).toBe(400)
    }
  })
})

/** A UnixFS file node over `links` (each declaring `tsize` and `blockSize`). */
async function fileNode (links: CID[], blockSize: number, tsize: number): Promise<CID> {
  const data = new UnixFS({ type: 'file', blockSizes: links.map(() => BigInt(blockSize)) })
  return await put(dagPb, dagPb.prepare({ Data: data.marshal(), Links: links.map(l => ({ Hash: l, Name: '', Tsize: tsize })) }))
}

describe('finding 10: one leaf linked 40,000 times', () => {
  const MiB = 1024 * 1024
  let leaf: CID
  let bomb: CID

  beforeAll(async () => {
    leaf = await putRaw(randomBytes(MiB))
    bomb = await fileNode(Array.from({ length: 40_000 }, () => leaf), MiB, 1)
  })

  it('as a file root, is quoted as the 41.9 GB file it declares, not at the minimum (over the pin limit: 413)', async () => {
    const r = await fetch(`${pind.url}/pins`, postPin({ cid: bomb.toString(), origins: origin.multiaddrs() }))
    expect(r.status).toBe(413)
    expect((await r.json() as any).error.details).toMatch(/41943040000 bytes/)
  })

  it('under a directory, is not pinned for the minimum and served: the pin fails, nothing is kept', async () => {
    // 10,000 links (a 460 KB root, a 10.5 GB file): the same trick, with a root block under 1 MiB
    const smaller = await fileNode(Array.from({ length: 10_000 }, () => leaf), MiB, 1)
    const dir = await put(dagPb, dagPb.prepare({ Data: new UnixFS({ type: 'directory' }).marshal(), Links: [{ Hash: smaller, Name: 'f', Tsize: 1 }] }))
    const quote = await fetch(`${pind.url}/pins`, postPin({ cid: dir.toString(), origins: origin.multiaddrs() }))
    expect(quote.status).toBe(402)
    expect((await quote.json() as any).price.amount).toBe('1000') // the directory declares nothing: the minimum
    const done = await pinAndSettle(dir)
    expect(done.status).toBe('failed')
    expect(done.info.status_details).toMatch(/repeated link/)
    const served = await fetch(`${pind.url}/ipfs/${dir}/f`, { method: 'HEAD' })
    expect(served.status).toBe(404)
    expect(served.headers.get('content-length')).not.toBe(String(10_000 * MiB))
  })

  it('an honest DAG that repeats a leaf (Tsizes count every link) is priced on what it serves and pinned', async () => {
    const own = await putRaw(randomBytes(MiB)) // not the leaf fetched (and dropped) just before
    const file = await fileNode(Array.from({ length: 12 }, () => own), MiB, MiB)
    const quote = await fetch(`${pind.url}/pins`, postPin({ cid: file.toString(), origins: origin.multiaddrs() }))
    expect(quote.status).toBe(402)
    expect(Number((await quote.json() as any).size)).toBeGreaterThan(12 * MiB)
    const done = await pinAndSettle(file)
    expect(done.status, String(done.info.status_details)).toBe('pinned')
    const body = Buffer.from(await (await fetch(`${pind.url}/ipfs/${file}`)).arrayBuffer())
    expect(body.length).toBe(12 * MiB)
    const car = await fetch(`${pind.url}/ipfs/${file}?format=car&dups=y`)
    expect(car.status).toBe(200)
    expect((await car.arrayBuffer()).byteLength).toBeLessThan(13 * MiB)
  })
})

describe('finding 14: identity CIDs and ?filename', () => {
  const html = (n: number): Buffer => Buffer.from(`<html><body><script>alert(document.domain)</script>${'x'.repeat(n)}</body></html>`)
  const inline = (bytes: Uint8Array): string => CID.createV1(0x55, identity.digest(bytes)).toString()

  it('a large identity CID (content nobody pinned or paid for) is refused', async () => {
    for (const q of ['', '?filename=a.pdf', '?format=raw']) {
      const r = await fetch(`${pind.url}/ipfs/${inline(html(3000))}${q}`)
      expect(r.status, q).toBe(400)
      expect((await r.json() as any).error.details).toMatch(/at most 128 bytes/)
    }
  })

  it('?filename=a.pdf does not serve HTML inline as a PDF, inline or pinned', async () => {
    const small = html(10)
    expect(small.length).toBeLessThanOrEqual(128)
    const r = await fetch(`${pind.url}/ipfs/${inline(small)}?filename=a.pdf`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).not.toMatch(/pdf/)
    expect(r.headers.get('content-disposition')).toMatch(/^attachment/)
    expect(r.headers.get('content-security-policy')).toBe('sandbox')

    const page = Buffer.concat([html(5000), Buffer.from(randomBytes(8).toString('hex'))])
    const up = await pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(page, 'page.bin') })
    expect(up.status).toBe(201)
    const { cid } = await up.json() as any
    const pinned = await fetch(`${pind.url}/ipfs/${cid}?filename=a.pdf`)
    expect(pinned.status).toBe(200)
    expect(pinned.headers.get('content-type')).not.toMatch(/pdf/)
    expect(pinned.headers.get('content-disposition')).toMatch(/^attachment/)
    // a real PDF keeps its name's type, inline
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n')
    const upPdf = await pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(Buffer.concat([pdf, randomBytes(16)]), 'doc.pdf') })
    const pdfCid = (await upPdf.json() as any).cid
    const real = await fetch(`${pind.url}/ipfs/${pdfCid}?filename=doc.pdf`)
    expect(real.headers.get('content-type')).toBe('application/pdf')
    expect(real.headers.get('content-disposition')).toBe('inline; filename="doc.pdf"')
  })
})
