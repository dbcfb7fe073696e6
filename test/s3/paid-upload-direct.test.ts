/**
 * A paid upload with S3 as the block store writes its blocks to the bucket
 * while its body arrives (once its payment verified), rather than staging
 * them on local disk and PUTting them after the settlement: the real binary,
 * a real Ceph RADOS Gateway, anvil with the test token. What it wrote goes
 * again whenever the upload does not end in a pin: the client gone, a body
 * over what was paid for, the process killed (the next start, from the
 * upload's write journal; a bucket refusing the deletes for a while: tried
 * again until it takes them); the payer is charged only for a pin. A payer
 * whose failed uploads wrote more than one upload's limit within the hour is
 * staged on local disk instead. (Settlements
 * that fail or whose outcome is lost: test/e2e/upload.test.ts and
 * settle-uncertain.test.ts, run on S3 too.)
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { blockstoreUnderTest, type BlockstoreUnderTest } from '../helpers/backend.js'
import { chainArgs, signChallenge, uploadChallenge } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { startThrottlingProxy } from '../helpers/s3-proxy.js'
import { openUpload } from '../helpers/ticket-upload.js'

const MiB = 1_048_576
let chain: DevChain
let pind: PindProcess
let blocks: BlockstoreUnderTest
let args: string[]
let env: Record<string, string>

beforeAll(async () => {
  chain = await startDevChain({ payers: 6 })
  blocks = await blockstoreUnderTest('s3')
  const c = chainArgs(chain)
  // one upload's limit: the most a payer's failed uploads may write to the bucket in an hour before theirs are staged
  args = [...c.args, ...blocks.args, '--s3-cache-size', '64MiB', '--upload-max-bytes', String(6 * MiB)]
  env = { ...c.env, ...blocks.env, PIND_LOG_LEVEL: 'info' }
  pind = await startPind({ args, env })
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')
/** the upload write journals of the data dir (src/ipfs/write-journal.ts) */
const journals = (dataDir = pind.dataDir): string[] => existsSync(join(dataDir, 'direct-writes')) ? readdirSync(join(dataDir, 'direct-writes')) : []
/** bytes in the data dir's staging folders (src/ipfs/staging.ts) */
const stagedBytes = (): number => {
  const root = join(pind.dataDir, 'staging')
  if (!existsSync(root)) return 0
  let n = 0
  for (const d of readdirSync(root)) for (const f of readdirSync(join(root, d))) n += statSync(join(root, d, f)).size
  return n
}
/** a paid upload of `size` declared bytes, its body left open */
async function paidUpload (payer: number, size: number, url = pind.url): Promise<ReturnType<typeof openUpload>> {
  const header = await signChallenge(chain, chain.payers[payer]!.privateKey, await uploadChallenge(url, size))
  return openUpload(url, { 'payment-signature': header, 'x-upload-size': String(size) })
}

describe('a paid upload to S3', () => {
  it('puts its blocks in the bucket while the body arrives, and the pin holds them; the read cache has a copy, no journal is left', async () => {
    const bytes = randomBytes(5 * MiB + 123)
    const start = await blocks.count(pind.dataDir)
    const u = await paidUpload(0, bytes.length)
    await u.write(bytes.subarray(0, 3 * MiB))
    // before the body has ended (nothing is settled yet): its first blocks are in the bucket already
    await waitFor(async () => await blocks.count(pind.dataDir) >= start + 2 ? true : undefined, 'the first blocks in the bucket before the body ends')
    expect(journals()).toHaveLength(1)
    await u.write(bytes.subarray(3 * MiB))
    u.end()
    const r = await u.response
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    // 6 leaves and a root, each once
    expect(await blocks.count(pind.dataDir)).toBe(start + 7)
    expect(journals()).toEqual([])
    const logged = JSON.parse(pind.stderr().split('\n').find(l => l.includes('"upload pinned"') && l.includes(r.body.cid)) as string)
    expect(logged).toMatchObject({ writes: 'direct', storedMs: expect.any(Number), commitMs: 0 })
    expect(readdirSync(join(pind.dataDir, 's3-cache')).filter(f => !f.includes('.tmp')).length).toBeGreaterThanOrEqual(6)
    const served = Buffer.from(await (await fetch(`${pind.url}/ipfs/${r.body.cid}`)).arrayBuffer())
    expect(sha(served)).toBe(sha(bytes))
  })

  it('a client that goes away mid-body: what it wrote is deleted, nobody is charged', async () => {
    const start = await blocks.count(pind.dataDir)
    const before = await usdcBalance(chain, chain.payers[1]!.address)
    const u = await paidUpload(1, 6 * MiB)
    await u.write(randomBytes(4 * MiB))
    await waitFor(async () => await blocks.count(pind.dataDir) >= start + 3 ? true : undefined, 'its blocks in the bucket')
    u.abort()
    await waitFor(async () => await blocks.count(pind.dataDir) === start && journals().length === 0 ? true : undefined, 'its blocks deleted and its journal gone')
    expect(await usdcBalance(chain, chain.payers[1]!.address)).toBe(before)
  })

  it('a body over what was paid for: 413 while it streams, what it wrote is deleted, nobody is charged', async () => {
    const start = await blocks.count(pind.dataDir)
    const before = await usdcBalance(chain, chain.payers[2]!.address)
    const u = await paidUpload(2, 3 * MiB)
    await u.write(randomBytes(5 * MiB)).catch(() => {})
    u.end()
    const r = await u.response
    expect(r.status).toBe(413)
    expect(r.body.error.reason).toBe('PAYLOAD_TOO_LARGE')
    // deleted before the answer
    expect(await blocks.count(pind.dataDir)).toBe(start)
    expect(journals()).toEqual([])
    expect(await usdcBalance(chain, chain.payers[2]!.address)).toBe(before)
  })

  it('kill -9 mid-body: the next start deletes what it wrote (from its journal), nobody is charged', async () => {
    const start = await blocks.count(pind.dataDir)
    const before = await usdcBalance(chain, chain.payers[3]!.address)
    const u = await paidUpload(3, 6 * MiB)
    await u.write(randomBytes(4 * MiB))
    await waitFor(async () => await blocks.count(pind.dataDir) >= start + 3 ? true : undefined, 'its blocks in the bucket')
    await pind.stop('SIGKILL')
    await u.response.catch(() => {})
    expect(journals()).toHaveLength(1)
    pind = await startPind({ args, env, dataDir: pind.dataDir })
    // removed at start, before serve answered: no gc ran
    expect(await blocks.count(pind.dataDir)).toBe(start)
    expect(journals()).toEqual([])
    expect(pind.stderr()).toMatch(/removed the blocks of a paid upload that the last run left unfinished/)
    expect(await usdcBalance(chain, chain.payers[3]!.address)).toBe(before)
  })

  it('a bucket that refuses the deletes when an upload fails: tried again until it takes them, the journal kept meanwhile; nobody is charged', async () => {
    // a serve of its own, on a bucket of its own reached through a proxy that can answer 503 SlowDown to everything
    const own = await blockstoreUnderTest('s3')
    const at = own.args.indexOf('--s3-endpoint') + 1
    const proxy = await startThrottlingProxy(own.args[at] as string)
    const ownArgs = own.args.map((a, i) => i === at ? proxy.endpoint : a)
    const c = chainArgs(chain)
    const p2 = await startPind({ args: [...c.args, ...ownArgs, '--upload-max-bytes', String(6 * MiB)], env: { ...c.env, ...own.env, PIND_LOG_LEVEL: 'info' } })
    try {
      const before = await usdcBalance(chain, chain.payers[5]!.address)
      const u = await paidUpload(5, 6 * MiB, p2.url)
      await u.write(randomBytes(4 * MiB))
      await waitFor(async () => await own.count(p2.dataDir) >= 3 ? true : undefined, 'its blocks in the bucket')
      const written = await own.count(p2.dataDir)
      proxy.failNext = 1_000_000
      u.abort()
      await waitFor(() => p2.stderr().includes('could not remove the blocks of a failed upload yet') ? true : undefined, 'the deletes refused')
      // the blocks stay, and the journal naming them, while the bucket refuses
      expect(journals(p2.dataDir)).toHaveLength(1)
      expect(await own.count(p2.dataDir)).toBeGreaterThanOrEqual(written)
      proxy.failNext = 0
      await waitFor(async () => await own.count(p2.dataDir) === 0 && journals(p2.dataDir).length === 0 ? true : undefined, 'its blocks deleted once the bucket takes deletes, its journal gone', 90_000, 1_000)
      expect(await usdcBalance(chain, chain.payers[5]!.address)).toBe(before)
    } finally {
      await p2.stop()
      await proxy.close()
    }
  })

  it('a payer whose failed uploads wrote more than one upload\'s limit within the hour is staged: nothing in the bucket before the payment settles', async () => {
    const start = await blocks.count(pind.dataDir)
    // two uploads cut after 4 MiB each: 8 MiB written and deleted again, past the 6 MiB allowance
    for (let i = 0; i < 2; i++) {
      const u = await paidUpload(4, 6 * MiB)
      await u.write(randomBytes(4 * MiB))
      await waitFor(async () => await blocks.count(pind.dataDir) >= start + 3 ? true : undefined, 'its blocks in the bucket')
      u.abort()
      await waitFor(async () => await blocks.count(pind.dataDir) === start && journals().length === 0 ? true : undefined, 'its blocks deleted')
    }
    // the next upload of that payer is staged on local disk: its body half sent, the bucket holds none of it
    const bytes = randomBytes(5 * MiB)
    const u = await paidUpload(4, bytes.length)
    await u.write(bytes.subarray(0, 3 * MiB))
    await waitFor(() => stagedBytes() >= 2 * MiB ? true : undefined, 'two of its blocks staged on local disk')
    expect(await blocks.count(pind.dataDir)).toBe(start)
    expect(journals()).toEqual([])
    await u.write(bytes.subarray(3 * MiB))
    u.end()
    const r = await u.response
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    const logged = JSON.parse(pind.stderr().split('\n').find(l => l.includes('"upload pinned"') && l.includes(r.body.cid)) as string)
    expect(logged.writes).toBe('staged')
    expect(await blocks.count(pind.dataDir)).toBe(start + 6)
    // another payer's upload still goes straight to the bucket
    const other = randomBytes(2 * MiB + 1)
    const o = await paidUpload(0, other.length)
    await o.write(other.subarray(0, 3 * MiB / 2))
    await waitFor(async () => await blocks.count(pind.dataDir) >= start + 7 ? true : undefined, 'the other payer\'s first block in the bucket before its body ends')
    await o.write(other.subarray(3 * MiB / 2))
    o.end()
    expect((await o.response).status).toBe(201)
  })
})
