#!/usr/bin/env node
/**
 * `npm start`: a complete local setup in one command. Starts a development
 * chain (anvil, chain id 167000, the test USDC, funded payers that hold no
 * ETH), then `pind serve` on it with the embedded facilitator. Writes what a
 * client needs (RPC, token address, a payer key) to <data dir>/dev-chain.json
 * for scripts/upload.mjs. Ctrl-C or SIGTERM (to npm or to this process) stops both.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDevChain } from './devchain/index.mjs'

const root = resolve(fileURLToPath(new URL('..', import.meta.url)))
const dataDir = resolve(process.env.PIND_DATA_DIR ?? join(root, 'pind-dev-data'))
mkdirSync(dataDir, { recursive: true, mode: 0o700 })

const chain = await startDevChain({ payers: 3 })
const settlerKeyFile = join(dataDir, 'settler.key')
writeFileSync(settlerKeyFile, chain.settlerKey + '\n', { mode: 0o600 })
const { stop, ...info } = chain
writeFileSync(join(dataDir, 'dev-chain.json'), JSON.stringify(info, null, 2) + '\n', { mode: 0o600 })

process.stdout.write(`dev chain: ${chain.rpcUrl} (chain id ${chain.chainId}), USDC ${chain.usdc}\n`)
process.stdout.write(`dev payer: ${chain.payers[0].address} (1,000,000 test USDC, no ETH)\n`)

const child = spawn(process.execPath, [join(root, 'dist/pind.cjs'), 'serve', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: {
    ...process.env,
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
  process.exit(code ?? (signal != null ? 0 : 1))
})
