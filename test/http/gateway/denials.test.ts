/**
 * The gateway and denied content (service/serving/denials.ts through the serve
 * policy), on a real server and a real blockstore with a real .deny file:
 * a denied CID is 410 Gone in the spec's error shape for every format and
 * for every path under it; a path rule is 410 for that path only (the CID it
 * leads to, asked for by itself, is another matter); a denied block reached
 * under an allowed root (a file in a directory) is 410 too, and cuts a CAR
 * stream that has started rather than send it.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DenylistSources } from '../../../src/denylist/sources.js'
import { silentLogger } from '../../../src/kernel/log.js'
import { Denials, refusingDenied } from '../../../src/service/serving/denials.js'
import { ServePolicy } from '../../../src/service/serving/serve-policy.js'
import { tempDir } from '../../helpers/pind.js'
import { makeFixture, rawGet, serve, type Fixture, type Served } from './helpers.js'

let fx: Fixture
let gw: Served
let lists: DenylistSources

beforeAll(async () => {
  fx = await makeFixture()
  const file = join(tempDir('pind-gw-deny-'), 'takedowns.deny')
  writeFileSync(file, [
    `/ipfs/${fx.root}/hello.txt`, // a path: through the gateway only
    `/ipfs/${fx.cids['root/nested/deep/file.txt']}`, // a CID inside an allowed directory
    `/ipfs/${fx.v0.cid}` // a whole root (CIDv0)
  ].join('\n') + '\n')
  lists = new DenylistSources([file], silentLogger)
  await lists.load()
  const denials = await Denials.open({ files: () => lists.files() })
  const policy = new ServePolicy({ pins: { isPinnedBlock: () => true, hasLivePin: () => false }, scope: 'pinned', denied: (cid, path) => denials.denied(cid, path) })
  gw = await serve({
    blockstore: refusingDenied(fx.store, (cid) => policy.refusal(cid)),
    isServable: (root) => policy.mayServe(root, 'gateway'),
    refusal: (root, path) => policy.refusal(root, path)
  }, fx)
  gw.servable.add(fx.cids['root/hello.txt']?.toString() as string)
})

afterAll(async () => {
  await gw?.close()
  await lists?.close()
  await fx?.close()
})

async function gone (path: string, init?: RequestInit): Promise<void> {
  const r = await fetch(`${gw.base}${path}`, init)
  expect(r.status, path).toBe(410)
  if (init?.method !== 'HEAD') {
    const body = await r.json() as { error: { reason: string, details: string } }
    expect(body.error.reason).toBe('GONE')
    expect(body.error.details).toMatch(/not served by this gateway: on the denylist takedowns\.deny/)
  }
}

describe('gateway: denied content', () => {
  it('a denied root is 410 in every format, with HEAD, and under every path', async () => {
    const v1 = fx.v0.cid.toV1().toString()
    for (const p of [`/ipfs/${fx.v0.cid}`, `/ipfs/${v1}`, `/ipfs/${v1}?format=raw`, `/ipfs/${v1}?format=car`, `/ipfs/${v1}/any/path`]) await gone(p)
    await gone(`/ipfs/${v1}`, { method: 'HEAD' })
  })

  it('a path rule: that path is 410; the directory, other paths and the file by its own CID are served', async () => {
    await gone(`/ipfs/${fx.root}/hello.txt`)
    expect((await fetch(`${gw.base}/ipfs/${fx.root}/`)).status).toBe(200)
    expect((await fetch(`${gw.base}/ipfs/${fx.root}/site/other.txt`)).status).toBe(200)
    const direct = await fetch(`${gw.base}/ipfs/${fx.cids['root/hello.txt']}`)
    expect(direct.status).toBe(200)
    expect(await direct.text()).toBe('hello world\n')
  })

  it('a denied block under an allowed root is 410 when reached, and cuts a CAR that has started', async () => {
    await gone(`/ipfs/${fx.root}/nested/deep/file.txt`)
    expect((await fetch(`${gw.base}/ipfs/${fx.root}/nested/deep/`)).status).toBe(200) // the listing names it, reads nothing of it
    const car = await rawGet(`${gw.base}/ipfs/${fx.root}?format=car`)
    expect(car.status).toBe(200)
    expect(car.complete).toBe(false)
  })
})
