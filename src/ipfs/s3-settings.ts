/**
 * What the S3 block store is configured with and reports, without the AWS SDK: its tuning, where
 * the blocks are, the credentials and how they are read, its errors and observations. Kept apart
 * from s3-client.ts so that what only names a bucket (the admin API, migrations, serve's start-up
 * checks) does not load the SDK: a data dir with its blocks on disk never loads it.
 */
import { readSecretFile } from '../kernel/secret-file.js'
import { z } from 'zod/v4'

export const S3_TUNING = {
  /** sockets (requests in flight) to the bucket across the whole process */
  maxSockets: 64,
  /** blocks written or read at once by one commit, migration worker pool or gc batch */
  concurrency: 8,
  /** blocks one gateway reader reads ahead (each a GET; the process-wide read-ahead budget still applies) */
  readAhead: 8,
  /** attempts per request (1 + retries) */
  maxAttempts: 4,
  connectTimeoutMs: 3_000,
  firstByteTimeoutMs: 15_000,
  idleTimeoutMs: 30_000,
  /** while the bucket is down, it is probed this often */
  probeIntervalMs: 1_000,
  /** one operation, all attempts included (--s3-timeout's default) */
  timeoutMs: 10_000,
  /** one listing page or batch delete of up to 1000 keys (gc, usage, migration: off the request path) */
  batchTimeoutMs: 60_000
} as const

/** An operation that did not finish within its deadline (the store took the request and did not answer). */
export class S3DeadlineError extends Error {
  override name = 'S3DeadlineError'
  constructor (readonly ms: number) {
    super(`no answer within ${ms / 1000} s`)
  }
}

/** where the blocks are: a bucket, and the prefix of their keys in it (`pind blocks migrate` sends it to serve as is) */
export const S3Location = z.object({
  endpoint: z.string().optional(),
  bucket: z.string(),
  prefix: z.string(),
  region: z.string(),
  forcePathStyle: z.boolean()
})
export type S3Location = z.output<typeof S3Location>

export const S3Credentials = z.object({
  accessKeyId: z.string(),
  secretAccessKey: z.string(),
  sessionToken: z.string().optional()
})
export type S3Credentials = z.output<typeof S3Credentials>

export class S3ConfigError extends Error {
  override name = 'S3ConfigError'
}

/** where the credentials may come from (the settings of the same names) */
export interface S3CredentialSources {
  s3AccessKeyId?: string
  s3SecretAccessKey?: string
  s3SessionToken?: string
  s3CredentialsFile?: string
}

/**
 * The credentials, from the environment (PIND_S3_ACCESS_KEY_ID,
 * PIND_S3_SECRET_ACCESS_KEY, optionally PIND_S3_SESSION_TOKEN) or from a file
 * that only its owner can read, in AWS's shared-credentials format
 * (`aws_access_key_id = …`, `aws_secret_access_key = …`, optionally
 * `aws_session_token = …`; `[section]` and comment lines are ignored).
 * Errors never quote the values.
 */
export function readS3Credentials (c: S3CredentialSources): S3Credentials {
  const file = c.s3CredentialsFile
  if (c.s3AccessKeyId != null && file != null) throw new S3ConfigError('set either PIND_S3_ACCESS_KEY_ID/PIND_S3_SECRET_ACCESS_KEY or --s3-credentials-file, not both')
  if (c.s3AccessKeyId != null || c.s3SecretAccessKey != null) {
    if (c.s3AccessKeyId == null || c.s3SecretAccessKey == null) throw new S3ConfigError('set both PIND_S3_ACCESS_KEY_ID and PIND_S3_SECRET_ACCESS_KEY')
    return { accessKeyId: c.s3AccessKeyId, secretAccessKey: c.s3SecretAccessKey, ...(c.s3SessionToken != null ? { sessionToken: c.s3SessionToken } : {}) }
  }
  if (file == null) throw new S3ConfigError('S3 credentials are missing: set PIND_S3_ACCESS_KEY_ID and PIND_S3_SECRET_ACCESS_KEY, or --s3-credentials-file <file> (mode 0600)')
  const text = readSecretFile(file, 'the S3 credentials file', (m) => new S3ConfigError(m))
  const values: Record<string, string> = {}
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*([A-Za-z_]+)\s*=\s*(\S+)\s*$/.exec(line)
    if (m != null) values[(m[1] as string).toLowerCase()] = m[2] as string
  }
  const accessKeyId = values.aws_access_key_id
  const secretAccessKey = values.aws_secret_access_key
  if (accessKeyId == null || secretAccessKey == null) throw new S3ConfigError(`the S3 credentials file ${file} needs the lines aws_access_key_id = … and aws_secret_access_key = …`)
  return { accessKeyId, secretAccessKey, ...(values.aws_session_token != null ? { sessionToken: values.aws_session_token } : {}) }
}

export type S3Outcome = 'ok' | 'not_found' | 'unavailable' | 'timeout' | 'error'
/** observes every request to the bucket: operation (GetObject, PutObject, …), seconds, outcome */
export type S3Observer = (operation: string, seconds: number, outcome: S3Outcome) => void
