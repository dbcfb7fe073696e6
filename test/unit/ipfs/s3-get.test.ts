/**
 * The SigV4 signature of a GetObject sent past the SDK (s3-get.ts) is the
 * one the SDK's own signer (@smithy/signature-v4, as the S3 client configures
 * it: no double encoding of the path) computes for the same request, with and
 * without a session token, for keys that need encoding. (Against a store, the
 * test/s3 tests send such GETs to Ceph RGW, which checks them.)
 */
import { createHash, createHmac } from 'node:crypto'
import { SignatureV4 } from '@smithy/signature-v4'
import { Agent } from 'undici'
import { describe, expect, it } from 'vitest'
import { DirectGet, encodeKey } from '../../../src/ipfs/s3-get.js'

class Sha256 {
  private readonly h
  constructor (secret?: unknown) { this.h = secret != null ? createHmac('sha256', secret as string | Uint8Array) : createHash('sha256') }
  update (d: unknown): void { this.h.update(d as string | Uint8Array) }
  async digest (): Promise<Uint8Array> { return this.h.digest() }
}

describe('a GetObject signed past the SDK', () => {
  const at = new Date('2026-11-28T19:04:05.678Z')
  for (const sessionToken of [undefined, 'FQoGZXIvYXdzEJr//////////wEaDNsession+token=']) {
    it(`signs as the SDK's signer does${sessionToken != null ? ', with a session token' : ''}`, async () => {
      const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', ...(sessionToken != null ? { sessionToken } : {}) }
      const agent = new Agent()
      const direct = new DirectGet(agent, { origin: 'http://127.0.0.1:7480', host: '127.0.0.1:7480', basePath: '/my-bucket', region: 'auto', service: 's3' }, credentials, 4)
      const sdk = new SignatureV4({ credentials, region: 'auto', service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false })
      for (const key of ['blocks/BCIQAB2C3D', 'a prefix/with spaces+plus/BCIQ', "odd!'()*~chars/é/BCIQ"]) {
        const path = `/my-bucket/${encodeKey(key)}`
        const ours = direct.sign(path, at)
        const theirs = await sdk.sign({ method: 'GET', protocol: 'http:', hostname: '127.0.0.1', port: 7480, path, query: {}, headers: { host: ours.host as string, 'x-amz-content-sha256': ours['x-amz-content-sha256'] as string } }, { signingDate: at })
        expect(ours.authorization, key).toBe(theirs.headers.authorization)
        expect(ours['x-amz-date']).toBe(theirs.headers['x-amz-date'])
        expect(ours['x-amz-security-token']).toBe(theirs.headers['x-amz-security-token'])
      }
      await agent.close()
    })
  }

  it('encodes a key as the SDK puts it in a path', () => {
    expect(encodeKey('blocks/BCIQ')).toBe('blocks/BCIQ')
    expect(encodeKey("a b/c+d/e!'()*~")).toBe('a%20b/c%2Bd/e%21%27%28%29%2A~')
  })
})
