/**
 * `pind keys` seen from the HTTP side with real tokens: rotate (old tokens
 * keep working), retire (its tokens stop), revoke all of an owner's tokens;
 * and moving the libp2p identity to another data dir keeps the peer ID.
 */
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'

const OWNER = '0x00000000000000000000000000000000000000c3'
let pind: PindProcess

const keys = async (...args: string[]): Promise<{ code: number | null, out: string, err: string }> =>
  await runPind(['keys', ...args, '--data-dir', pind.dataDir])
const mint = async (): Promise<string> => {
  const r = await keys('mint', '--owner', OWNER, '--json')
  expect(r.code, r.err).toBe(0)
  return JSON.parse(r.out).token
}
const status = async (token: string): Promise<number> =>
  (await fetch(`${pind.url}/pins`, { headers: { authorization: `Bearer ${token}` } })).status

beforeAll(async () => { pind = await startPind() })
afterAll(async () => { await pind?.stop() })

describe('pind keys against a running serve', () => {
  it('rotates, retires and revokes, and the HTTP side follows', async () => {
    const t1 = await mint()
    const kid1 = JSON.parse((await keys('list', '--json')).out).keys[0].kid as string
    const rotated = await keys('rotate', '--json')
    expect(rotated.code, rotated.err).toBe(0)
    const kid2 = JSON.parse(rotated.out).rotated.kid as string
    expect(kid2).not.toBe(kid1)
    const t2 = await mint()
    expect(JSON.parse(Buffer.from(t2.split('.')[0]!, 'base64url').toString()).kid).toBe(kid2)
    expect(await status(t1)).toBe(200) // signed by the older, still active key
    expect(await status(t2)).toBe(200)
    const jwks = await (await fetch(`${pind.url}/.well-known/jwks.json`)).json() as any
    expect(jwks.keys.map((k: any) => k.kid).sort()).toEqual([kid1, kid2].sort())

    const retired = await keys('retire', kid1)
    expect(retired.code, retired.err).toBe(0)
    expect(await status(t1)).toBe(401)
    expect(await status(t2)).toBe(200)
    expect((await keys('retire', 'no-such-kid')).code).toBe(1)

    const revoked = await keys('revoke', '--owner', OWNER)
    expect(revoked.code, revoked.err).toBe(0)
    expect(await status(t2)).toBe(401)
    const listed = JSON.parse((await keys('list', '--json')).out)
    expect(listed.keys.find((k: any) => k.kid === kid1).status).toBe('retired')
    expect(listed.operatorTokens.every((t: any) => t.revoked != null)).toBe(true)
    for (const f of ['keys']) expect(statSync(join(pind.dataDir, f)).mode & 0o077).toBe(0)
  })

  it('exports the libp2p identity and imports it elsewhere: same peer ID', async () => {
    const peer = await keys('peer-id')
    expect(peer.out.trim()).toBe(pind.peerId)
    const file = join(tempDir(), 'id.json')
    const exp = await keys('export-identity', file)
    expect(exp.code, exp.err).toBe(0)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect((await keys('export-identity', file)).code).toBe(1) // no overwrite without --force

    const fresh = tempDir()
    const imp = await runPind(['keys', 'import-identity', file, '--data-dir', fresh])
    expect(imp.code, imp.err).toBe(0)
    const moved = await startPind({ dataDir: fresh })
    try {
      expect(moved.peerId).toBe(pind.peerId)
      const busy = await runPind(['keys', 'import-identity', file, '--data-dir', fresh, '--force'])
      expect(busy.code).toBe(1)
      expect(busy.err).toMatch(/stop it first/)
    } finally {
      await moved.stop()
    }
    const again = await runPind(['keys', 'import-identity', file, '--data-dir', fresh])
    expect(again.code).toBe(1)
    expect(again.err).toMatch(/use --force/)
  })
})
