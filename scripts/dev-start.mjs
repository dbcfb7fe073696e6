#!/usr/bin/env node
/**
 * `npm start`: a complete local setup in one command. Starts a development
 * chain (anvil, chain id 167000, the test USDC, funded payers that hold no
 * ETH), then `pind serve` on it with the embedded facilitator. Writes what a
 * client needs (RPC, token address, a payer key) to <data dir>/dev-chain.json
 * for scripts/upload.mjs. Ctrl-C or SIGTERM (to npm or to this process) stops
 * serve, the chain and (with --s3) the gateway.
 *
 * `npm start -- --s3`: the blocks go to an S3 bucket of a throwaway Ceph RADOS
 * Gateway on 127.0.0.1 (scripts/s3/; the first time it installs the Debian
 * packages, as root). Its data lives in RAM and goes when it stops, so this
 * mode uses its own data dir, ./pind-dev-data-s3, emptied at every start (a
 * PIND_DATA_DIR given instead must be empty: nothing else is ever removed).
 * Where the gateway runs goes to <data dir>/dev-s3.json (endpoint, bucket,
 * its folder and pids; the credentials stay in that folder's s3.json).
 *
 * `npm start -- --postgres`: the ledger goes to a throwaway PostgreSQL cluster
 * on 127.0.0.1 (scripts/postgres.mjs), removed when this stops, so this mode
 * too uses a data dir of its own, ./pind-dev-data-pg (emptied at every
 * start; -s3-pg with both). Where it runs goes to <data dir>/dev-postgres.json.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDevChain } from './devchain/index.mjs'

const root = resolve(fileURLToPath(new URL('..', import.meta.url)))
const withS3 = process.argv.includes('--s3')
const withPostgres = process.argv.includes('--postgres')
const serveArgs = process.argv.slice(2).filter(a => a !== '--s3' && a !== '--postgres')
const suffix = `${withS3 ? '-s3' : ''}${withPostgres ? '-pg' : ''}`
const dataDir = resolve(process.env.PIND_DATA_DIR ?? join(root, `pind-dev-data${suffix}`))
if (withS3 || withPostgres) {
  if (process.env.PIND_DATA_DIR == null) rmSync(dataDir, { recursive: true, force: true })
  else if (existsSync(dataDir) && readdirSync(dataDir).length > 0) {
    process.stderr.write(withS3
      ? `npm start -- --s3: ${dataDir} is not empty; the throwaway bucket lives in RAM, so --s3 needs an empty data dir (or unset PIND_DATA_DIR to use ./pind-dev-data${suffix})\n`
      : `npm start -- --postgres: ${dataDir} is not empty; the throwaway database goes when this stops, so --postgres needs an empty data dir (or unset PIND_DATA_DIR to use ./pind-dev-data${suffix})\n`)
    process.exit(2)
  }
}
mkdirSync(dataDir, { recursive: true, mode: 0o700 })

let s3
let s3Env = {}
if (withS3) {
  const { startS3 } = await import('./s3/index.mjs')
  process.stdout.write('starting a throwaway S3 server (Ceph RADOS Gateway)...\n')
  s3 = await startS3({ quiet: false })
  const bucket = await s3.createBucket('pind-dev')
  serveArgs.push('--blockstore', 's3', '--s3-endpoint', s3.endpoint, '--s3-bucket', bucket, '--s3-force-path-style')
  s3Env = s3.env()
  writeFileSync(join(dataDir, 'dev-s3.json'), JSON.stringify({ endpoint: s3.endpoint, bucket, dir: s3.dir, pids: s3.pids }, null, 2) + '\n', { mode: 0o600 })
  process.stdout.write(`dev S3: ${s3.endpoint}, bucket ${bucket} (data in RAM, gone when this stops)\n`)
}

let postgres
if (withPostgres) {
  const { startPostgres } = await import('./postgres.mjs')
  process.stdout.write('starting a throwaway PostgreSQL cluster...\n')
  postgres = await startPostgres().catch(async (err) => { await s3?.stop(); throw err })
  serveArgs.push('--ledger', 'postgres', '--database-url', postgres.url)
  writeFileSync(join(dataDir, 'dev-postgres.json'), JSON.stringify(postgres, null, 2) + '\n', { mode: 0o600 })
  process.stdout.write(`dev PostgreSQL: ${postgres.url} (gone when this stops)\n`)
}
const stopPostgres = async () => {
  if (postgres == null) return
  const { stopPostgres } = await import('./postgres.mjs')
  await stopPostgres({ dir: postgres.dir, remove: true }).catch(() => {})
}

// (a chain that fails to start must not leave the gateway's daemons or the database behind)
const chain = await startDevChain({ payers: 3 }).catch(async (err) => { await s3?.stop(); await stopPostgres(); throw err })
const settlerKeyFile = join(dataDir, 'settler.key')
writeFileSync(settlerKeyFile, chain.settlerKey + '\n', { mode: 0o600 })
const { stop, ...info } = chain
writeFileSync(join(dataDir, 'dev-chain.json'), JSON.stringify(info, null, 2) + '\n', { mode: 0o600 })

process.stdout.write(`dev chain: ${chain.rpcUrl} (chain id ${chain.chainId}), USDC ${chain.usdc}\n`)
process.stdout.write(`dev payer: ${chain.payers[0].address} (1,000,000 test USDC, no ETH)\n`)

const child = spawn(process.execPath, [join(root, 'dist/pind.cjs'), 'serve', ...serveArgs], {
  stdio: 'inherit',
  env: {
    ...process.env,
    ...s3Env,
    PIND_DATA_DIR: dataDir,
    PIND_RPC_URL: chain.rpcUrl,
    PIND_ASSET: chain.usdc,
    PIND_PAY_TO: chain.payTo,
    PIND_SETTLER_KEY_FILE: settlerKeyFile,
    PIND_LOG_LEVEL: process.env.PIND_LOG_LEVEL ?? 'info',
    // a dev setup pins from peers on this machine (a local Kubo, scripts/peer): origins may be loopback
    PIND_ORIGIN_ADDRESSES: process.env.PIND_ORIGIN_ADDRESSES ?? 'any'
  }
})
// Ctrl-C and SIGTERM alike (npm forwards both to this process: the start script execs it)
// stop serve, then the chain; a second signal stops both at once
let signalled = 0
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    signalled++
    child.kill(signalled > 1 ? 'SIGKILL' : sig === 'SIGHUP' ? 'SIGTERM' : sig)
  })
}
child.on('exit', async (code, signal) => {
  await stop()
  await s3?.stop()
  await stopPostgres()
  process.exit(code ?? (signal != null ? 0 : 1))
})
