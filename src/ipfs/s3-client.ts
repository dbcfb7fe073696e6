/**
 * The one connection to the S3 bucket, and the one place where how it talks
 * to S3 is set (S3_TUNING): sockets in flight, attempts and backoff, timeouts.
 *
 * - Retries: the SDK's standard mode, exponential backoff with jitter, on 5xx,
 *   throttling (429, SlowDown, 503), timeouts and connection errors, up to
 *   `maxAttempts` per request.
 * - Timeouts: a connection must open within `connectTimeoutMs`, a response
 *   must start within `firstByteTimeoutMs`, and a body must not stall for
 *   `idleTimeoutMs`. Over them, each operation (all its attempts, its body
 *   read to the end) has a deadline, --s3-timeout (10 s; gc's listings and
 *   batch deletes `batchTimeoutMs`): a store that takes connections and
 *   answers nothing (a frozen process) fails a request within it, well inside
 *   the HTTP server's idle timeout, instead of after 4 attempts of 15 s. The
 *   deadline reaches the SDK's handler through an AsyncLocalStorage
 *   (DeadlineHandler), not the `abortSignal` option: a request sent with
 *   options resolves its own middleware stack and drops the cached ones.
 * - Outages: a request that still fails for a reason of the store (not
 *   reachable, 5xx, throttled, timed out, bucket gone, access denied) marks
 *   the bucket down. While it is down no request is sent: reads and writes
 *   fail at once with 503 (StorageUnavailableError), and a probe (HeadBucket)
 *   runs every `probeIntervalMs` until the bucket answers; then it is up
 *   again by itself. Paid writes check `writable()` before any payment is used.
 * - Every request is observed (operation, seconds, outcome) for metrics.
 * - The SDK's per-request work is kept small (the service's main thread is
 *   what a gateway read from S3 waits for): the middleware stack is resolved
 *   once per command class (`cacheMiddleware`), middleware pind has no use
 *   for is taken out (UNNEEDED_MIDDLEWARE), and a PUT whose body's SHA-256 is
 *   known already (a sha2-256 block's CID) is signed with it
 *   (withPayloadSha256) instead of hashing the body again.
 * - Credentials come from the environment or a 0600 file (readS3Credentials)
 *   and never appear in a log line or an error: messages from the store are
 *   passed through `redact`.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { UndiciHttpHandler } from '@smithy/undici-http-handler'
import { Agent } from 'undici'
import type { Logger } from '../kernel/log.js'
import { readS3Credentials, S3_TUNING, S3ConfigError, S3Credentials, S3DeadlineError, S3Location, type S3CredentialSources, type S3Observer, type S3Outcome } from './s3-settings.js'
import { CorruptBlockError, StorageTimeoutError, StorageUnavailableError } from './block-backend.js'



/** the deadline of the operation being sent (S3Connection.send), read by DeadlineHandler */
const operationSignal = new AsyncLocalStorage<AbortSignal>()

/**
 * The SDK's request handler, each attempt given the abort signal of the
 * operation it belongs to (its deadline) besides the SDK's own, if any.
 */
class DeadlineHandler {
  constructor (private readonly inner: UndiciHttpHandler) {}

  async handle (request: Parameters<UndiciHttpHandler['handle']>[0], options: Parameters<UndiciHttpHandler['handle']>[1] = {}): ReturnType<UndiciHttpHandler['handle']> {
    const deadline = operationSignal.getStore()
    if (deadline == null) return await this.inner.handle(request, options)
    const own = options.abortSignal as AbortSignal | undefined
    return await this.inner.handle(request, { ...options, abortSignal: own != null ? AbortSignal.any([own, deadline]) : deadline })
  }

  updateHttpClientConfig (key: never, value: never): void {
    this.inner.updateHttpClientConfig(key, value)
  }

  httpHandlerConfigs (): ReturnType<UndiciHttpHandler['httpHandlerConfigs']> {
    return this.inner.httpHandlerConfigs()
  }

  destroy (): void {
    this.inner.destroy()
  }
}


/**
 * Middleware of the SDK's standard S3 stack that pind's requests do without
 * (each is CPU on the main thread for every request):
 * - loggerMiddleware: logs each request's input and output at `info` (pind's
 *   SDK logger drops `info`; a failed request is logged by S3Connection.send);
 * - getUserAgentMiddleware: builds the `user-agent` and `x-amz-user-agent`
 *   headers (S3 needs neither);
 * - recursionDetectionMiddleware: the `X-Amzn-Trace-Id` header inside AWS Lambda;
 * - addExpectContinueMiddleware: `Expect: 100-continue` on bodies of 2 MiB or
 *   more, which the undici handler removes again before sending.
 * What stays: endpoint resolution, serialization, retries with backoff,
 * SigV4 signing, parsing of responses and errors, checksums where S3
 * requires them, region redirects, S3 Express.
 */
export const UNNEEDED_MIDDLEWARE = ['loggerMiddleware', 'getUserAgentMiddleware', 'recursionDetectionMiddleware', 'addExpectContinueMiddleware'] as const

/** bodies whose SHA-256 (hex) is known before they are sent: see withPayloadSha256 */
const payloadSha256 = new WeakMap<object, string>()

/**
 * Says that `body`, about to be sent as a PutObject's Body (by the next
 * request that sends it), has this SHA-256 (hex). The request is then signed
 * with it (the `x-amz-content-sha256` header, which the store checks the body
 * against) instead of the SDK hashing the body again: a sha2-256 block's CID
 * is that hash already. Per body, not per command: the middleware stack is
 * resolved once per command class.
 */
export function withPayloadSha256<T extends Uint8Array> (body: T, sha256Hex: string): T {
  payloadSha256.set(body, sha256Hex)
  return body
}


type Failure = 'missing' | 'timeout' | 'unavailable' | 'other'

/** the connection failed or was cut (node's codes; undici's for a socket closed or failing mid-request) */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED', 'ERR_SOCKET_CONNECTION_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED'])
/** no connection, no response or a stalled body in time (undici's: connect, headers, body) */
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])

export function classify (err: unknown): Failure {
  const e = err as { name?: string, code?: string, $metadata?: { httpStatusCode?: number } }
  const status = e?.$metadata?.httpStatusCode
  const name = e?.name ?? ''
  if (name === 'NoSuchKey' || (status === 404 && name === 'NotFound')) return 'missing'
  // a cut connection is an outage, whatever name the transport gave it (the undici handler calls it RequestTimeout, for the SDK to retry it)
  if (status == null && e?.code != null && NETWORK_CODES.has(e.code)) return 'unavailable'
  if (name === 'TimeoutError' || name === 'RequestTimeout' || (e?.code != null && TIMEOUT_CODES.has(e.code)) || status === 504 || status === 408) return 'timeout'
  if (status != null && (status >= 500 || status === 429 || status === 401 || status === 403)) return 'unavailable'
  if (name === 'NoSuchBucket' || name === 'SlowDown' || name === 'AccessDenied' || name === 'InvalidAccessKeyId' || name === 'SignatureDoesNotMatch') return 'unavailable'
  if (e?.code != null && NETWORK_CODES.has(e.code)) return 'unavailable'
  if (status == null && /socket hang up|ECONNREFUSED|ECONNRESET|connect/i.test(String((err as Error)?.message))) return 'unavailable'
  return 'other'
}

/** A store-side failure that is not an outage (a bug, a bad request): carries no SDK internals. */
export class S3RequestError extends Error {
  override name = 'S3RequestError'
}

/** an SDK command (what S3Client.send takes) */
type SdkCommand = object

export class S3Connection {
  readonly client: S3Client
  private down = false
  private downSince = 0
  private lastFailure = ''
  private probeTimer: NodeJS.Timeout | undefined
  private closed = false
  observer?: S3Observer
  /** called when the bucket goes down or comes back */
  onChange?: (up: boolean) => void

  /** the deadline of one operation (all attempts), ms */
  readonly timeoutMs: number

  constructor (readonly location: S3Location, private readonly credentials: S3Credentials, private readonly log: Logger, opts: { timeoutMs?: number } = {}) {
    this.timeoutMs = opts.timeoutMs ?? S3_TUNING.timeoutMs
    const sdkLog = {
      debug: () => {},
      info: () => {},
      warn: (...a: unknown[]) => { log.debug('s3 client', { message: this.redact(a.map(String).join(' ')).slice(0, 300) }) },
      error: (...a: unknown[]) => { log.debug('s3 client', { message: this.redact(a.map(String).join(' ')).slice(0, 300) }) }
    }
    this.client = new S3Client({
      ...(location.endpoint != null ? { endpoint: location.endpoint } : {}),
      region: location.region,
      forcePathStyle: location.forcePathStyle,
      credentials,
      // S3-compatible stores (Ceph RGW 16, older MinIO, …) refuse the SDK's default
      // streaming trailer checksums; send and check checksums only where S3 requires them
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: S3_TUNING.maxAttempts,
      retryMode: 'standard',
      // the middleware stack is resolved once per command class, not per request (requests sent
      // with an abort signal still resolve their own): nothing here changes a stack after a request,
      // and every request of a class shares one context (the same bucket, so the same endpoint)
      cacheMiddleware: true,
      logger: sdkLog,
      // undici carries the bytes (the SDK keeps commands, signing and retries): one pool of
      // keep-alive connections per endpoint, bodies handed over as they arrive
      requestHandler: new DeadlineHandler(new UndiciHttpHandler({
        dispatcher: new Agent({
          connections: S3_TUNING.maxSockets,
          connect: { timeout: S3_TUNING.connectTimeoutMs },
          headersTimeout: S3_TUNING.firstByteTimeoutMs,
          bodyTimeout: S3_TUNING.idleTimeoutMs
        })
      })) as unknown as UndiciHttpHandler
    })
    for (const name of UNNEEDED_MIDDLEWARE) this.client.middlewareStack.remove(name)
    this.client.middlewareStack.add((next) => async (args) => {
      const request = args.request as { body?: unknown, headers: Record<string, string> }
      const body = request.body
      const hash = body != null && typeof body === 'object' ? payloadSha256.get(body) : undefined
      if (hash != null) {
        // once: retries send the request as built here
        payloadSha256.delete(body as object)
        request.headers['x-amz-content-sha256'] = hash
      }
      return await next(args)
    }, { step: 'build', name: 'pindPayloadSha256' })
  }

  /** The bucket answers (as far as this process knows). */
  isUp (): boolean {
    return !this.down
  }

  /** Why the bucket is down (public wording, no internals). */
  downReason (): string {
    return `the S3 bucket has not answered since ${new Date(this.downSince).toISOString()} (${this.lastFailure})`
  }

  /** The object key of a name under the configured prefix. */
  key (name: string): string {
    return `${this.location.prefix}${name}`
  }

  /**
   * Sends one command (`operation` names it in metrics and logs: class
   * names do not survive bundling), within its deadline (`timeoutMs`, or
   * `deadlineMs`): past it the request is aborted and the operation fails as
   * a timeout. Outages become StorageUnavailableError (503) or
   * StorageTimeoutError (504) and mark the bucket down; `missing` answers
   * (NoSuchKey, a 404 HEAD) are returned as `undefined` when `allowMissing`.
   */
  async send<T, R = T> (operation: string, command: SdkCommand, opts: { signal?: AbortSignal, allowMissing?: boolean, probe?: boolean, deadlineMs?: number } = {}, finish?: (out: T) => Promise<R>): Promise<R | undefined> {
    if (this.down && opts.probe !== true) throw new StorageUnavailableError(`the block storage is unreachable (${this.lastFailure}); retry shortly`)
    const t0 = performance.now()
    const deadlineMs = opts.deadlineMs ?? this.timeoutMs
    const deadline = new AbortController()
    let timer: NodeJS.Timeout | undefined
    // the SDK may sleep between attempts (a Retry-After it was sent, too): the operation ends at its deadline all the same
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const err = new S3DeadlineError(deadlineMs)
        deadline.abort(err)
        reject(err)
      }, deadlineMs)
    })
    expired.catch(() => {})
    try {
      const work = operationSignal.run(deadline.signal, async () => {
        // no options at all unless there is a signal: a request with options resolves its own middleware stack
        const out = await (opts.signal != null ? this.client.send(command as never, { abortSignal: opts.signal }) : this.client.send(command as never)) as T
        // a body is read inside the same error handling and deadline: a connection cut or stalled mid-body is an outage too
        return finish != null ? await finish(out) : out as unknown as R
      })
      work.catch(() => {})
      const result = await Promise.race([work, expired])
      this.observe(operation, t0, 'ok')
      this.up()
      return result
    } catch (err) {
      if (opts.signal?.aborted === true) throw opts.signal.reason ?? err
      if (err instanceof CorruptBlockError) {
        // the bucket answered, with bytes that are not the block: not an outage, and said as it is
        this.observe(operation, t0, 'error')
        this.up()
        throw err
      }
      let kind = deadline.signal.aborted ? 'timeout' : classify(err)
      // HeadBucket's 404 has no body: the bucket itself is missing
      if (kind === 'missing' && operation === 'HeadBucket') kind = 'unavailable'
      if (kind === 'missing') {
        this.observe(operation, t0, 'not_found')
        this.up()
        if (opts.allowMissing === true) return undefined
        throw new S3RequestError(`${operation}: not found`)
      }
      if (kind === 'timeout' || kind === 'unavailable') {
        this.observe(operation, t0, kind)
        this.markDown(operation, deadline.signal.aborted ? deadline.signal.reason : err)
        throw kind === 'timeout' ? new StorageTimeoutError() : new StorageUnavailableError()
      }
      this.observe(operation, t0, 'error')
      throw new S3RequestError(`${operation} failed: ${this.describeError(err)}`)
    } finally {
      clearTimeout(timer)
    }
  }

  /** HeadBucket, past the fast-fail: does the bucket answer now? */
  async check (): Promise<void> {
    await this.send('HeadBucket', new HeadBucketCommand({ Bucket: this.location.bucket }), { probe: true })
  }

  /** The last reason the bucket was found down (public wording). */
  failure (): string {
    return this.lastFailure
  }

  close (): void {
    this.closed = true
    clearTimeout(this.probeTimer)
    this.client.destroy()
  }

  /** Replaces the credentials' values in a message (they must never reach a log or an error). */
  redact (text: string): string {
    let out = text
    for (const secret of [this.credentials.secretAccessKey, this.credentials.accessKeyId, this.credentials.sessionToken]) {
      if (secret != null && secret.length >= 4) out = out.split(secret).join('(redacted)')
    }
    return out
  }

  describeError (err: unknown): string {
    const e = err as { name?: string, code?: string, message?: string, $metadata?: { httpStatusCode?: number } }
    const parts = [e?.name ?? 'Error']
    if (e?.$metadata?.httpStatusCode != null) parts.push(`HTTP ${e.$metadata.httpStatusCode}`)
    if (e?.code != null) parts.push(e.code)
    const message = this.redact(String(e?.message ?? '')).replace(/\s+/g, ' ').slice(0, 200)
    return `${parts.join(' ')}${message !== '' && message !== e?.name ? `: ${message}` : ''}`
  }

  private observe (operation: string, t0: number, outcome: S3Outcome): void {
    this.observer?.(operation, (performance.now() - t0) / 1000, outcome)
  }

  private up (): void {
    if (!this.down) return
    this.down = false
    clearTimeout(this.probeTimer)
    this.log.warn('S3 bucket reachable again', { bucket: this.location.bucket, downSeconds: Math.round((Date.now() - this.downSince) / 1000) })
    this.onChange?.(true)
  }

  private markDown (operation: string, err: unknown): void {
    const e = err as { name?: string, code?: string, $metadata?: { httpStatusCode?: number } }
    this.lastFailure = operation === 'HeadBucket' && e?.$metadata?.httpStatusCode === 404
      ? 'the bucket does not exist'
      : err instanceof S3DeadlineError ? `${operation}: ${err.message}`
      : e?.$metadata?.httpStatusCode != null ? `HTTP ${e.$metadata.httpStatusCode}` : (e?.code ?? e?.name ?? 'error')
    if (this.down) return
    this.down = true
    this.downSince = Date.now()
    this.log.warn('S3 bucket unreachable: paid writes answer 503 and reads of blocks not cached answer 503/504 until it answers again', { bucket: this.location.bucket, operation, error: this.describeError(err) })
    this.onChange?.(false)
    this.scheduleProbe()
  }

  private scheduleProbe (): void {
    if (this.closed) return
    clearTimeout(this.probeTimer)
    this.probeTimer = setTimeout(() => {
      this.check().catch(() => { this.scheduleProbe() })
    }, S3_TUNING.probeIntervalMs)
    this.probeTimer.unref()
  }
}

export { readS3Credentials, S3_TUNING, S3ConfigError, S3Credentials, S3DeadlineError, S3Location, type S3CredentialSources, type S3Observer, type S3Outcome }
