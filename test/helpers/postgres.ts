/**
 * A throwaway PostgreSQL cluster for a test file (scripts/postgres.mjs): one
 * cluster per file, started in beforeAll and stopped in afterAll, and a
 * fresh database for each test (CREATE DATABASE takes ~40 ms here).
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { startPostgres, stopPostgres } from '../../scripts/postgres.mjs'

export interface TestPostgres {
  /** the cluster's own database `pind` */
  url: string
  dir: string
  /** a new, empty database: its URL, and how to drop it */
  freshDatabase(): Promise<{ url: string, drop(): Promise<void> }>
  /** Turns TLS on (a reload: connections open stay as they are): a new CA, and a certificate for 127.0.0.1 it signed; the CA's PEM file. */
  enableTls(): Promise<{ caFile: string }>
  /** Stops the server as a crash would (pg_ctl -m immediate): every connection cut, the data kept. */
  crash(): Promise<void>
  /** Starts the server again on its data dir and port (after crash()). */
  restart(): Promise<void>
  stop(): Promise<void>
}

let databases = 0

/** `durable`: commits survive crash() (the default cluster may lose the last ones, as a crash of a server with synchronous_commit off would) */
export async function startTestPostgres (opts: { durable?: boolean } = {}): Promise<TestPostgres> {
  const cluster = await startPostgres({ durable: opts.durable === true })
  // a worker that dies without its afterAll still takes its server with it
  const onExit = (): void => {
    if (!existsSync(join(cluster.dir, 'postmaster.pid'))) return
    const args = ['-D', cluster.dir, '-m', 'immediate', 'stop']
    const bin = '/usr/lib/postgresql/15/bin/pg_ctl'
    try { execFileSync(process.getuid?.() === 0 ? 'runuser' : bin, process.getuid?.() === 0 ? ['-u', 'postgres', '--', bin, ...args] : args, { stdio: 'ignore' }) } catch {}
  }
  process.once('exit', onExit)
  let admin = new pg.Client({ connectionString: cluster.url })
  // a connection the server cut (crash()) is not an uncaught error
  const quiet = (c: pg.Client): void => { c.on('error', () => {}) }
  quiet(admin)
  try {
    await admin.connect()
  } catch (err) {
    await stopPostgres({ dir: cluster.dir, remove: true })
    throw err
  }
  const urlOf = (db: string): string => {
    const u = new URL(cluster.url)
    u.pathname = `/${db}`
    return u.toString()
  }
  return {
    url: cluster.url,
    dir: cluster.dir,
    freshDatabase: async () => {
      const name = `pind_test_${process.pid}_${++databases}`
      await admin.query(`CREATE DATABASE ${name}`)
      return { url: urlOf(name), drop: async () => { await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) } }
    },
    enableTls: async () => {
      const d = cluster.dir
      const ssl = (args: string[]): void => { execFileSync('openssl', args, { cwd: d, stdio: 'ignore' }) }
      ssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=pind test CA', '-keyout', 'ca.key', '-out', 'ca.crt'])
      ssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'server.key', '-out', 'server.csr'])
      writeFileSync(join(d, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
      ssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', 'san.ext', '-out', 'server.crt'])
      chmodSync(join(d, 'server.key'), 0o600)
      // the server reads its key as itself
      if (process.getuid?.() === 0) execFileSync('chown', ['postgres:postgres', join(d, 'server.key'), join(d, 'server.crt')])
      await admin.query(`ALTER SYSTEM SET ssl_cert_file = '${join(d, 'server.crt')}'`)
      await admin.query(`ALTER SYSTEM SET ssl_key_file = '${join(d, 'server.key')}'`)
      await admin.query('ALTER SYSTEM SET ssl = on')
      await admin.query('SELECT pg_reload_conf()')
      return { caFile: join(d, 'ca.crt') }
    },
    crash: async () => {
      await stopPostgres({ dir: cluster.dir, mode: 'immediate' })
      await admin.end().catch(() => {})
    },
    restart: async () => {
      await startPostgres({ dir: cluster.dir, port: cluster.port, durable: opts.durable === true })
      admin = new pg.Client({ connectionString: cluster.url })
      quiet(admin)
      await admin.connect()
    },
    stop: async () => {
      await admin.end().catch(() => {})
      await stopPostgres({ dir: cluster.dir, remove: true })
      process.off('exit', onExit)
    }
  }
}
