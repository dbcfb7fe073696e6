#!/usr/bin/env node
/**
 * A throwaway PostgreSQL cluster for tests and development (Debian's
 * postgresql 15, /usr/lib/postgresql/15/bin).
 *
 *   node scripts/postgres.mjs start [--dir D]   prints one JSON line: {"url", "dir", "port"}
 *   node scripts/postgres.mjs stop --dir D [--rm] [--immediate]
 *
 * The cluster listens on 127.0.0.1 at a random free port and on a Unix
 * socket in its data dir, trusts every local connection (no password), and
 * runs with fsync off: it is thrown away, so a crash costs nothing. Tests
 * import startPostgres() / stopPostgres() (test/helpers/postgres.ts).
 *
 * initdb and postgres refuse to run as root: as root the data dir is given
 * to the `postgres` user and the binaries run through `runuser -u postgres`.
 */
import { execFile } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
const BIN = process.env.PIND_PG_BIN ?? '/usr/lib/postgresql/15/bin'
const DATABASE = 'pind'

const asRoot = () => process.getuid?.() === 0

/** runs a PostgreSQL binary, as the `postgres` user when this process is root */
async function pg (bin, args, opts = {}) {
  const file = join(BIN, bin)
  const [cmd, argv] = asRoot() ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args]
  try {
    return await run(cmd, argv, { timeout: 60_000, ...opts })
  } catch (err) {
    const e = /** @type {Error & { stderr?: string }} */ (err)
    throw new Error(`${bin} ${args.join(' ')} failed: ${(e.stderr ?? '').trim() || e.message}`)
  }
}

/** a port nothing listens on at 127.0.0.1 right now (the server may still lose it to another process: start retries) */
async function freePort () {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 40_000)
    const free = await new Promise((resolveFree) => {
      const s = createServer()
      s.once('error', () => resolveFree(false))
      s.listen(port, '127.0.0.1', () => s.close(() => resolveFree(true)))
    })
    if (free) return port
  }
}

/** as root: the cluster's files belong to the `postgres` user, who runs the server */
async function giveToPostgres (path) {
  if (asRoot()) await run('chown', ['-R', 'postgres:postgres', path])
}

/**
 * Starts a cluster in `dir` (created, with initdb, when it holds none; a new
 * temp dir when absent) and creates the database `pind`. Returns its URL,
 * data dir and port. `port`: listen on this one (a cluster started again
 * where its clients look for it), not a random free one. `durable`: a
 * commit is written out before it returns (synchronous_commit on), so that
 * it survives a crash of the server (fsync stays off: only the machine's
 * crash would lose it). `settings`: more server settings (`-c name=value`),
 * e.g. `{ shared_preload_libraries: 'pg_stat_statements' }` (scripts/bench-frontends.mjs).
 *
 * @param {{ dir?: string, port?: number, durable?: boolean, settings?: Record<string, string> }} [opts]
 * @returns {Promise<{ url: string, dir: string, port: number }>}
 */
export async function startPostgres (opts = {}) {
  let dir = opts.dir
  if (dir == null) {
    const parent = mkdtempSync(join(tmpdir(), 'pind-pg-'))
    // the server, running as `postgres`, must reach its data dir through the parent
    chmodSync(parent, 0o755)
    dir = join(parent, 'data')
  }
  dir = resolve(dir)
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    // parents made here stay traversable for the `postgres` user; the data dir is its alone (initdb insists)
    mkdirSync(dirname(dir), { recursive: true, mode: 0o755 })
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    chmodSync(dir, 0o700)
    await giveToPostgres(dir)
    await pg('initdb', ['-D', dir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-locale', '--no-sync'])
  }
  let lastErr
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = opts.port ?? await freePort()
    try {
      await pg('pg_ctl', ['-D', dir, '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=${opts.durable === true ? 'on' : 'off'} -c full_page_writes=off${Object.entries(opts.settings ?? {}).map(([k, v]) => ` -c ${k}=${v}`).join('')}`, '-l', join(dir, 'log'), '-w', '-t', '60', 'start'])
    } catch (err) {
      lastErr = err
      // lost the port to another process meanwhile: another one
      const log = existsSync(join(dir, 'log')) ? readFileSync(join(dir, 'log'), 'utf8') : ''
      if (opts.port == null && /could not bind|Address already in use/.test(log)) continue
      throw err
    }
    try {
      const existing = await pg('psql', ['-h', dir, '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-Atc', `SELECT 1 FROM pg_database WHERE datname = '${DATABASE}'`])
      if (existing.stdout.trim() !== '1') await pg('createdb', ['-h', dir, '-p', String(port), '-U', 'postgres', DATABASE])
    } catch (err) {
      // started, but not usable: not left running
      await stopPostgres({ dir }).catch(() => {})
      throw err
    }
    return { url: `postgres://postgres@127.0.0.1:${port}/${DATABASE}`, dir, port }
  }
  throw lastErr
}

/**
 * Stops the cluster in `dir` (fast shutdown: open sessions are ended; mode
 * `immediate`: a crash, sessions cut without a word); with `remove`, deletes
 * it and the temp dir startPostgres made around it.
 *
 * @param {{ dir: string, remove?: boolean, mode?: 'fast' | 'immediate' }} opts
 * @returns {Promise<void>}
 */
export async function stopPostgres (opts) {
  const dir = resolve(opts.dir)
  if (existsSync(join(dir, 'postmaster.pid'))) {
    await pg('pg_ctl', ['-D', dir, '-m', opts.mode ?? 'fast', '-w', '-t', '60', 'stop']).catch(async (err) => {
      // the server is gone already when its pid file is stale: nothing to stop
      if (!existsSync(join(dir, 'postmaster.pid'))) return
      const pid = Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0])
      if (Number.isInteger(pid) && pid > 0) {
        try { process.kill(pid, 'SIGQUIT') } catch { return }
        return
      }
      throw err
    })
  }
  if (opts.remove === true) {
    rmSync(dir, { recursive: true, force: true })
    const parent = dirname(dir)
    if (parent.startsWith(join(tmpdir(), 'pind-pg-'))) rmSync(parent, { recursive: true, force: true })
  }
}

function main (argv) {
  const [cmd] = argv
  const at = argv.indexOf('--dir')
  const dir = at >= 0 ? argv[at + 1] : undefined
  if (cmd === 'start') {
    startPostgres({ dir }).then((c) => { process.stdout.write(JSON.stringify(c) + '\n') }, (err) => { process.stderr.write(`${err.message}\n`); process.exitCode = 1 })
  } else if (cmd === 'stop' && dir != null) {
    stopPostgres({ dir, remove: argv.includes('--rm'), mode: argv.includes('--immediate') ? 'immediate' : 'fast' }).catch((err) => { process.stderr.write(`${err.message}\n`); process.exitCode = 1 })
  } else {
    process.stderr.write('usage: node scripts/postgres.mjs start [--dir D] | stop --dir D [--rm] [--immediate]\n')
    process.exitCode = 2
  }
}

if (process.argv[1] != null && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2))
