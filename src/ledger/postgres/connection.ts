/**
 * How the PostgreSQL ledger connects: its options, the pool built from them
 * (TLS with a CA file, a statement timeout), and errors made safe to show:
 * the connection string's password never appears in a message.
 */
import { readFileSync } from 'node:fs'
import pg from 'pg'
import type { ConnectionOptions } from 'node:tls'
import { LedgerUnavailableError } from '../errors.js'

export interface PostgresTls {
  /**
   * disable: plain TCP; require: TLS, the server not verified; verify-ca: the
   * server's certificate must chain to `caFile`; verify-full (default when
   * `caFile` is set): that, and the certificate must name the host
   */
  mode?: 'disable' | 'require' | 'verify-ca' | 'verify-full'
  /** PEM file of the CA(s) the server's certificate must chain to */
  caFile?: string
}

export interface PostgresConnectionOptions {
  /** postgres://user:password@host:port/database (a password here is never shown in errors) */
  connectionString: string
  /** connections in the pool (default 10) */
  poolSize?: number
  /** ms a statement may run before the server cancels it, waiting for a row lock included (default 30,000; 0: no limit) */
  statementTimeoutMs?: number
  /** ms to wait for a connection, from the pool or the server, before failing (default 30,000) */
  connectTimeoutMs?: number
  /**
   * TLS to the server, its modes meaning what libpq's do; absent: as the
   * connection string's sslmode says, which node-postgres reads itself (its
   * `require` verifies the certificate against the system's CAs)
   */
  ssl?: PostgresTls
}

/** the password in a connection string, if any (what redact() takes out) */
function passwordOf (connectionString: string): string | undefined {
  try {
    const u = new URL(connectionString)
    return u.password === '' ? undefined : decodeURIComponent(u.password)
  } catch {
    const m = /:\/\/[^:/@]*:([^@]*)@/.exec(connectionString)
    return m?.[1] === '' ? undefined : m?.[1]
  }
}

/** A copy of `err` whose message and stack no longer contain the password (also as it appears percent-encoded). */
export function redact<E> (err: E, connectionString: string): E {
  const password = passwordOf(connectionString)
  if (password == null || !(err instanceof Error)) return err
  const forms = [...new Set([password, encodeURIComponent(password), connectionString])].filter(f => f.length > 0)
  const clean = (s: string | undefined): string | undefined => {
    if (s == null) return s
    let out = s
    for (const f of forms) out = out.split(f).join(f === connectionString ? safeTarget(connectionString) : '***')
    return out
  }
  err.message = clean(err.message) ?? ''
  if (err.stack != null) err.stack = clean(err.stack)
  // a URL that did not parse carries it whole
  const withInput = err as Error & { input?: unknown }
  if (typeof withInput.input === 'string') withInput.input = clean(withInput.input)
  return err
}

/** the connection string without its password, for messages and logs */
export function safeTarget (connectionString: string): string {
  try {
    const u = new URL(connectionString)
    if (u.password !== '') u.password = '***'
    return u.toString()
  } catch {
    return connectionString.replace(/(:\/\/[^:/@]*:)[^@]*@/, '$1***@')
  }
}

function tlsOf (ssl: PostgresTls): false | ConnectionOptions {
  const mode = ssl.mode ?? (ssl.caFile != null ? 'verify-full' : 'require')
  if (mode === 'disable') return false
  const ca = ssl.caFile != null ? readFileSync(ssl.caFile, 'utf8') : undefined
  if (mode === 'require') return { rejectUnauthorized: false, ...(ca != null ? { ca } : {}) }
  if (ca == null) throw new Error(`PostgreSQL TLS mode ${mode} needs a CA file`)
  // verify-ca: the chain is checked, the name is not (libpq's meaning)
  return mode === 'verify-ca' ? { ca, rejectUnauthorized: true, checkServerIdentity: () => undefined } : { ca, rejectUnauthorized: true }
}

/** socket errors that mean the server is not there (or went away) */
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])

/**
 * Whether `err` says the database cannot be reached now rather than that a
 * statement was wrong: a refused, reset or cut connection, the server
 * shutting down or not yet accepting (57P01-57P03), a connection exception
 * (class 08), or no connection within the connect timeout.
 */
export function unreachable (err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string') {
    if (NET_CODES.has(code) || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return true
  }
  // node-postgres says these in words, with no code
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection terminated unexpectedly/i.test(err.message)
}

/**
 * What the ledger throws for a database error: a LedgerUnavailableError when
 * it means the database is unreachable (the HTTP layer answers it with 503
 * and Retry-After), else the error itself; the password redacted from both.
 */
export function dbError (err: unknown, connectionString: string): unknown {
  const clean = redact(err, connectionString)
  if (!unreachable(clean)) return clean
  const e = new LedgerUnavailableError()
  e.cause = clean
  return e
}

/** the connection string without the TLS parameters the `ssl` option replaces (node-postgres lets the string's win) */
function withoutSslParams (connectionString: string): string {
  try {
    const u = new URL(connectionString)
    for (const k of ['sslmode', 'ssl', 'sslrootcert', 'sslcert', 'sslkey']) u.searchParams.delete(k)
    return u.toString()
  } catch {
    return connectionString
  }
}

/** what one connection is opened with (the pool's, and the change feed's own) */
export function clientConfig (o: PostgresConnectionOptions): pg.ClientConfig {
  return {
    connectionString: o.ssl != null ? withoutSslParams(o.connectionString) : o.connectionString,
    statement_timeout: o.statementTimeoutMs ?? 30_000,
    // a pool whose connections are all held (by transactions waiting on one another, or a dead server) fails a caller instead of holding it for ever
    connectionTimeoutMillis: o.connectTimeoutMs ?? 30_000,
    application_name: 'pind',
    ...(o.ssl != null ? { ssl: tlsOf(o.ssl) } : {})
  }
}

/** The pool of connections the ledger's reads and writes take turns on. */
export function createPool (o: PostgresConnectionOptions): pg.Pool {
  const pool = new pg.Pool({
    ...clientConfig(o),
    max: o.poolSize ?? 10
  })
  // an idle connection the server dropped: the pool discards it, and the next query opens another
  pool.on('error', () => {})
  // one lent out (a transaction between its statements, a snapshot being read) has no listener of the
  // pool's: its error would be uncaught and stop the process; its next statement fails instead, and
  // the connection is released as broken
  pool.on('connect', (client) => { client.on('error', () => {}) })
  return pool
}
