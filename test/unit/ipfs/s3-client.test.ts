/**
 * S3 credentials come from the environment or a file only its owner can
 * read, and no error quotes them; failures of the store are told apart from
 * answers (a missing block) and from bugs (a bad request).
 */
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { errors } from 'undici'
import { describe, expect, it } from 'vitest'
import { classify, readS3Credentials, S3ConfigError } from '../../../src/ipfs/s3-client.js'
import { tempDir } from '../../helpers/pind.js'

const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'

function failure (f: () => unknown): Error {
  try { f() } catch (err) { return err as Error }
  throw new Error('no error')
}

describe('readS3Credentials', () => {
  it('reads the environment pair, or a 0600 file in the AWS shared-credentials format', () => {
    expect(readS3Credentials({ s3AccessKeyId: 'AKID', s3SecretAccessKey: SECRET })).toEqual({ accessKeyId: 'AKID', secretAccessKey: SECRET })
    expect(readS3Credentials({ s3AccessKeyId: 'AKID', s3SecretAccessKey: SECRET, s3SessionToken: 'TOKEN' }).sessionToken).toBe('TOKEN')
    const file = join(tempDir(), 'credentials')
    writeFileSync(file, `# pind\n[default]\naws_access_key_id = AKID\naws_secret_access_key=${SECRET}\n`, { mode: 0o600 })
    expect(readS3Credentials({ s3CredentialsFile: file })).toEqual({ accessKeyId: 'AKID', secretAccessKey: SECRET })
  })

  it('refuses a file others can read, half a pair, both sources, or none — never quoting a secret', () => {
    const file = join(tempDir(), 'credentials')
    writeFileSync(file, `aws_access_key_id = AKID\naws_secret_access_key = ${SECRET}\n`)
    chmodSync(file, 0o640)
    const errors = [
      failure(() => readS3Credentials({ s3CredentialsFile: file })),
      failure(() => readS3Credentials({ s3AccessKeyId: 'AKID' })),
      failure(() => readS3Credentials({ s3SecretAccessKey: SECRET })),
      failure(() => readS3Credentials({ s3AccessKeyId: 'AKID', s3SecretAccessKey: SECRET, s3CredentialsFile: file })),
      failure(() => readS3Credentials({})),
      failure(() => readS3Credentials({ s3CredentialsFile: join(tempDir(), 'missing') }))
    ]
    expect(errors[0]?.message).toMatch(/must not be readable by group or others/)
    expect(errors[4]?.message).toMatch(/credentials are missing/)
    for (const e of errors) {
      expect(e).toBeInstanceOf(S3ConfigError)
      expect(e.message).not.toContain(SECRET)
    }
    chmodSync(file, 0o600)
    writeFileSync(file, 'aws_access_key_id = AKID\n')
    expect(failure(() => readS3Credentials({ s3CredentialsFile: file })).message).toMatch(/needs the lines/)
  })
})

describe('classify', () => {
  const sdk = (name: string, status?: number, code?: string): unknown => Object.assign(new Error(name), { name, code, ...(status != null ? { $metadata: { httpStatusCode: status } } : {}) })
  it('tells missing blocks, outages, timeouts and bugs apart', () => {
    expect(classify(sdk('NoSuchKey', 404))).toBe('missing')
    expect(classify(sdk('NotFound', 404))).toBe('missing')
    expect(classify(sdk('Error', undefined, 'ECONNREFUSED'))).toBe('unavailable')
    expect(classify(sdk('Error', undefined, 'ECONNRESET'))).toBe('unavailable')
    expect(classify(sdk('SlowDown', 503))).toBe('unavailable')
    expect(classify(sdk('InternalError', 500))).toBe('unavailable')
    expect(classify(sdk('AccessDenied', 403))).toBe('unavailable')
    expect(classify(sdk('NoSuchBucket', 404))).toBe('unavailable')
    expect(classify(sdk('TimeoutError', undefined, 'ETIMEDOUT'))).toBe('timeout')
    expect(classify(sdk('RequestTimeout', 400))).toBe('timeout')
    expect(classify(sdk('InvalidArgument', 400))).toBe('other')
  })

  it('tells undici\'s failures apart the same way (the transport under the SDK)', () => {
    // refused: the error of the socket itself
    expect(classify(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }))).toBe('unavailable')
    // cut mid-request or mid-body: an outage, also as the handler renames it for the SDK's retries
    expect(classify(new errors.SocketError('other side closed'))).toBe('unavailable')
    expect(classify(Object.assign(new errors.SocketError('other side closed'), { name: 'RequestTimeout' }))).toBe('unavailable')
    expect(classify(new errors.ClientClosedError())).toBe('unavailable')
    // no connection, no headers, or a body that stalls, in time
    expect(classify(new errors.ConnectTimeoutError())).toBe('timeout')
    expect(classify(Object.assign(new errors.HeadersTimeoutError(), { name: 'TimeoutError' }))).toBe('timeout')
    expect(classify(new errors.HeadersTimeoutError())).toBe('timeout')
    expect(classify(new errors.BodyTimeoutError())).toBe('timeout')
  })
})
