#!/usr/bin/env node
/**
 * Pays for and uploads a file, a directory or a CAR with the real x402 client
 * (@x402/fetch), as an agent would. Against `npm start` it needs no arguments
 * but the path:
 *   node scripts/upload.mjs ./some-file [months]
 *   node scripts/upload.mjs ./site/ [months]        (a directory: every file under it, by its path)
 *   node scripts/upload.mjs ./dag.car [months]      (a .car file: the DAG it holds, pinned by its root)
 *   node scripts/upload.mjs --ticket ./some-file [months]
 * With --ticket it buys a prepaid upload ticket for the file's size first
 * (POST /upload/tickets, settled at once), then uploads with it (POST /upload
 * with X-Upload-Ticket and the wallet token the purchase returned): the
 * blocks reach the store while the file streams.
 * Environment: PIND_URL (default http://127.0.0.1:8080), PAYER_KEY (default: the
 * dev payer from <data dir>/dev-chain.json), PIND_DATA_DIR (default ./pind-dev-data),
 * PIND_USDC (the asset's address; default: the dev chain's).
 * Prints the CID (the root), the wallet token and the gateway URL (for a
 * directory, the site's: its index.html is served there), and, when the
 * service runs the subdomain gateway (--gateway-domain), the site's URL: its
 * own origin, where HTML runs and _redirects is followed.
 */
import { existsSync, openAsBlob, readdirSync, readFileSync, statSync } from 'node:fs'
import { basename, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { privateKeyToAccount } from 'viem/accounts'

const argv = process.argv.slice(2)
const withTicket = argv.includes('--ticket')
const [file, months = '1'] = argv.filter(a => a !== '--ticket')
if (file == null) {
  process.stderr.write('usage: node scripts/upload.mjs [--ticket] <file | directory | file.car> [months]\n')
  process.exit(2)
}
const root = resolve(fileURLToPath(new URL('..', import.meta.url)))
const url = process.env.PIND_URL ?? 'http://127.0.0.1:8080'
const devFile = join(resolve(process.env.PIND_DATA_DIR ?? join(root, 'pind-dev-data')), 'dev-chain.json')
const dev = existsSync(devFile) ? JSON.parse(readFileSync(devFile, 'utf8')) : undefined
const key = process.env.PAYER_KEY ?? dev?.payers[0].privateKey
const usdc = process.env.PIND_USDC ?? dev?.usdc
if (key == null || usdc == null) {
  process.stderr.write(`no payer: set PAYER_KEY and PIND_USDC, or run against npm start (${devFile})\n`)
  process.exit(2)
}
const client = x402Client.fromConfig({
  schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(key))) }],
  spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: usdc }] }
})
const pay = wrapFetchWithPayment(fetch, client)
const form = new FormData()
const isDirectory = statSync(file).isDirectory()
const isCar = !isDirectory && file.endsWith('.car')
/** what the upload is priced on: the bytes of every file sent */
let size = 0
if (isDirectory) {
  for (const f of filesUnder(file)) {
    form.append('file', await openAsBlob(f), relative(file, f).split(sep).join('/'))
    size += statSync(f).size
  }
} else {
  form.append('file', new Blob([await openAsBlob(file)], { type: isCar ? 'application/vnd.ipld.car' : '' }), basename(file))
  size = statSync(file).size
}
const target = `${url}/upload${isDirectory ? '?format=directory' : ''}`

/** every file under a directory, in path order */
function filesUnder (dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter(e => e.isFile()).map(e => join(e.parentPath, e.name)).sort()
}

let res
let token
if (withTicket) {
  // 1. the ticket: quoted on the file's size, paid and settled before the file is sent
  const bought = await pay(`${url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': String(size), 'x-pin-duration-months': months } })
  const ticket = await bought.json()
  if (bought.status !== 201) {
    process.stderr.write(`ticket purchase failed: ${bought.status} ${JSON.stringify(ticket)}\n`)
    process.exit(1)
  }
  token = bought.headers.get('x-wallet-auth-token')
  process.stdout.write(`ticket:      ${ticket.ticket} (${ticket.usdc} USDC, tx ${ticket.transaction}; valid until ${ticket.expiresAt})\n`)
  // 2. the upload with it: the payer's wallet token, no payment
  res = await fetch(target, { method: 'POST', body: form, headers: { 'x-upload-ticket': ticket.ticket, authorization: `Bearer ${token}` } })
} else {
  res = await pay(target, { method: 'POST', body: form, headers: { 'x-pin-duration-months': months, 'x-upload-size': String(size) } })
  token = res.headers.get('x-wallet-auth-token')
}
const body = await res.json()
if (res.status !== 201) {
  process.stderr.write(`upload failed: ${res.status} ${JSON.stringify(body)}\n`)
  process.exit(1)
}
process.stdout.write(`cid:         ${body.cid}\n`)
process.stdout.write(`paid:        ${body.price.usdc} USDC (tx ${body.price.transaction})\n`)
process.stdout.write(`token:       ${token}\n`)
process.stdout.write(`gateway url: ${body.gateway_url}${isDirectory ? '/' : ''}\n`)
// with the subdomain gateway on (pind serve --gateway-domain), the site's own origin
if (body.site_url != null) process.stdout.write(`site url:    ${body.site_url}\n`)
if (body.files != null) process.stdout.write(`files:       ${body.files.length}\n`)
