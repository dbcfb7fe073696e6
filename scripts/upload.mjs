#!/usr/bin/env node
/**
 * Pays for and uploads a file with the real x402 client (@x402/fetch), as an
 * agent would. Against `npm start` it needs no arguments but the file:
 *   node scripts/upload.mjs ./some-file [months]
 * Environment: PIND_URL (default http://127.0.0.1:8080), PAYER_KEY (default: the
 * dev payer from <data dir>/dev-chain.json), PIND_DATA_DIR (default ./pind-dev-data).
 * Prints the CID, the wallet token and the gateway URL.
 */
import { openAsBlob, readFileSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { privateKeyToAccount } from 'viem/accounts'

const [file, months = '1'] = process.argv.slice(2)
if (file == null) {
  process.stderr.write('usage: node scripts/upload.mjs <file> [months]\n')
  process.exit(2)
}
const root = resolve(fileURLToPath(new URL('..', import.meta.url)))
const url = process.env.PIND_URL ?? 'http://127.0.0.1:8080'
const dev = JSON.parse(readFileSync(join(resolve(process.env.PIND_DATA_DIR ?? join(root, 'pind-dev-data')), 'dev-chain.json'), 'utf8'))
const key = process.env.PAYER_KEY ?? dev.payers[0].privateKey
const client = x402Client.fromConfig({
  schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(key))) }],
  spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: dev.usdc }] }
})
const pay = wrapFetchWithPayment(fetch, client)
const form = new FormData()
form.append('file', await openAsBlob(file), basename(file))
const res = await pay(`${url}/upload`, { method: 'POST', body: form, headers: { 'x-pin-duration-months': months } })
const body = await res.json()
if (res.status !== 201) {
  process.stderr.write(`upload failed: ${res.status} ${JSON.stringify(body)}\n`)
  process.exit(1)
}
process.stdout.write(`cid:         ${body.cid}\n`)
process.stdout.write(`paid:        ${body.price.usdc} USDC (tx ${body.price.transaction})\n`)
process.stdout.write(`token:       ${res.headers.get('x-wallet-auth-token')}\n`)
process.stdout.write(`gateway url: ${body.gateway_url}\n`)
