/**
 * Shared helpers for the benchmark scripts: start the built binary (or the
 * bundle) on a fresh data dir, wait for /health, read RSS from /proc.
 * BENCH_ECHO=1 copies the service's stderr to this process's stderr.
 * BENCH_SERVE_NODE_OPTIONS is the service's NODE_OPTIONS (only the service's):
 * e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` profiles it under the benchmark's load.
 * BENCH_SERVE_ENV (JSON object) is more environment for every pind a script starts
 * (serve, keys mint, ...), not for the script itself or its baselines: `npm run bench`
 * (scripts/bench.mjs) passes the production unit's runtime settings this way
 * (productionRuntimeEnv); BENCH_SERVE_NODE_OPTIONS is appended to its NODE_OPTIONS.
 * BENCH_BINARY: the binary the scripts run instead of dist/pind.
 * `--json` (scripts that support it): a last line on stdout with the figures as JSON (jsonResult).
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { x402Client, x402HTTPClient } from '@x402/fetch'
import { request } from 'undici'
import { privateKeyToAccount } from 'viem/accounts'

export const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))
export const BINARY = process.env.BENCH_BINARY ? resolve(process.env.BENCH_BINARY) : join(ROOT, 'dist/pind')

// the production runtime environment (scripts/runtime-env.mjs): what bench.mjs passes to every pind it starts
export { unitEnvironmentWords, unitRuntimeEnv as productionRuntimeEnv } from './runtime-env.mjs'

/**
 * The environment of a pind a benchmark starts: this process's, then BENCH_SERVE_ENV's entries
 * (the production runtime settings, from scripts/bench.mjs), NODE_OPTIONS with
 * BENCH_SERVE_NODE_OPTIONS appended, then `env` (the script's own settings for that run).
 */
export function pindEnv (env = {}) {
  const extra = process.env.BENCH_SERVE_ENV ? JSON.parse(process.env.BENCH_SERVE_ENV) : {}
  const nodeOptions = [extra.NODE_OPTIONS, process.env.BENCH_SERVE_NODE_OPTIONS].filter(Boolean).join(' ')
  return { ...process.env, ...extra, ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}), ...env }
}

/**
 * Runs commands one after the other from a small child process and times each there (spawn to
 * exit, as a shell would see it): `[{ ms, stdout }]` in order, or throws on a command's failure.
 * Spawning from this process would time its own fork too, which grows with its memory (a
 * benchmark holding a large ledger: /bin/true took 26 ms to spawn from a 450 MiB node process
 * against 9.5 ms from a fresh one), not the command's start.
 * `runs`: `{ file, args, env }` each (env: the command's whole environment).
 */
export function timeCommands (runs) {
  const runner = `
    const { execFileSync } = require('node:child_process')
    const out = []
    for (const r of JSON.parse(require('node:fs').readFileSync(0, 'utf8'))) {
      const t0 = performance.now()
      const stdout = execFileSync(r.file, r.args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: r.env })
      out.push({ ms: performance.now() - t0, stdout })
    }
    process.stdout.write(JSON.stringify(out))`
  const out = execFileSync(process.execPath, ['-e', runner], { input: JSON.stringify(runs), encoding: 'utf8', maxBuffer: 64 * 2 ** 20, env: process.env })
  return JSON.parse(out)
}

/** With `--json` on the command line, prints `figures` as one JSON line (the last on stdout; scripts/bench.mjs reads it). */
export function jsonResult (figures) {
  if (process.argv.includes('--json')) console.log(JSON.stringify(figures))
}

/**
 * Starts `pind serve`, resolves when /health answers 200; `ms` is spawn → first 200.
 * `binaryArgs` go before `serve`: `{ binary: process.execPath, binaryArgs: ['dist/pind.cjs'] }` runs the bundle.
 * `startTimeoutMs`: how long the start may take (default 30 s; a large ledger upgrades first).
 */
export async function startServe ({ args = [], env = {}, binary = BINARY, binaryArgs = [], startTimeoutMs = 30_000, dataDir = mkdtempSync(join(tmpdir(), 'pind-bench-')) } = {}) {
  const t0 = performance.now()
  const proc = spawn(binary, [...binaryArgs, 'serve', '--data-dir', dataDir, '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0', ...args], {
    env: pindEnv(env), stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  proc.stdout.on('data', b => { out += b })
  let err = ''
  proc.stderr.on('data', b => { err += b; if (process.env.BENCH_ECHO) process.stderr.write(b) })
  const deadline = Date.now() + startTimeoutMs
  let url
  try {
    for (;;) {
      if (proc.exitCode != null) throw new Error(`pind exited: ${err}`)
      if (Date.now() > deadline) throw new Error('pind did not start')
      url ??= /^\s+http:\s+(\S+)$/m.exec(out)?.[1]
      if (url != null) {
        try {
          const r = await fetch(`${url}/health`)
          if (r.status === 200) break
        } catch {}
      }
      await new Promise(resolve => setTimeout(resolve, 2))
    }
  } catch (e) {
    // nothing is left behind: the process (if it still runs) and its data dir
    if (proc.exitCode == null && proc.signalCode == null) proc.kill('SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
    throw e
  }
  const ms = performance.now() - t0
  return {
    url, proc, dataDir, ms,
    /** what the service wrote on stderr so far */
    stderr: () => err,
    /** SIGTERM, wait for the exit, remove the data dir */
    stop: async () => {
      if (proc.exitCode == null && proc.signalCode == null) {
        const exited = new Promise(resolve => proc.on('exit', resolve))
        proc.kill('SIGTERM')
        await exited
      }
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

/** Current and peak resident set size of a process, in MiB. */
export function rss (pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN)
  return { rssMiB: kb('VmRSS') / 1024, peakMiB: kb('VmHWM') / 1024 }
}

/** user + system CPU of a process so far, in ms (clock ticks of 10 ms) */
export function cpuMs (pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(f[11]) + Number(f[12])) * 10
}

export const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }

const BOUNDARY = 'pind-bench-boundary'
const HEAD = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="bench.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`)
const TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`)

/** A multipart upload body streamed from memory in 64 KiB pieces, as a socket would deliver it (undici.request). */
export function multipartPost (url, bytes, headers = {}) {
  async function * body () {
    yield HEAD
    for (let o = 0; o < bytes.length; o += 65536) yield bytes.subarray(o, o + 65536)
    yield TAIL
  }
  return request(url, {
    method: 'POST',
    body: body(),
    headers: { ...headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(HEAD.length + bytes.length + TAIL.length) }
  })
}

/** The x402 client of a payer of the dev chain, and its HTTP helper. */
export function x402For (chain, privateKey) {
  const client = x402Client.fromConfig({
    schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(privateKey))) }],
    spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: chain.usdc }] }
  })
  return { client, http: new x402HTTPClient(client) }
}

/**
 * The whole paid exchange with a lean client: unpaid POST /upload → 402 (pind answers as soon as
 * the head is read) → sign the EIP-3009 authorization → paid POST → 201. Resolves with the time
 * and the response body. `path`: another upload path (e.g. `/upload?format=car`).
 */
export async function paidUpload (url, bytes, payer, path = '/upload') {
  return await paidPost(async (headers) => await multipartPost(`${url}${path}`, bytes, headers), payer)
}

/**
 * The same exchange for any request: `post(headers)` sends it (the first time with no payment
 * headers), and must send the whole body each time. Resolves with the time and the 201's body.
 */
export async function paidPost (post, { client, http }) {
  const t0 = performance.now()
  const unpaid = await post({})
  const challenge = await unpaid.body.text()
  if (unpaid.statusCode !== 402) throw new Error(`expected 402, got ${unpaid.statusCode} ${challenge}`)
  const required = http.getPaymentRequiredResponse(n => unpaid.headers[n.toLowerCase()], JSON.parse(challenge))
  const headers = http.encodePaymentSignatureHeader(await client.createPaymentPayload(required))
  const paid = await post(headers)
  const text = await paid.body.text()
  if (paid.statusCode !== 201) throw new Error(`upload failed: ${paid.statusCode} ${text}`)
  return { ms: performance.now() - t0, body: JSON.parse(text) }
}

/**
 * The same paid upload by a prepaid ticket, all timed: unpaid POST /upload/tickets → 402 →
 * sign → paid POST /upload/tickets (settled at once, no body) → 201 with the ticket and a
 * wallet token → POST /upload with X-Upload-Ticket and the token → 201. Resolves with the
 * time, the time of the ticket purchase alone, and the upload's body.
 */
export async function ticketUpload (url, bytes, { client, http }) {
  const t0 = performance.now()
  const sizeHeaders = { 'x-upload-size': String(bytes.length) }
  const unpaid = await request(`${url}/upload/tickets`, { method: 'POST', headers: sizeHeaders })
  const challenge = await unpaid.body.text()
  if (unpaid.statusCode !== 402) throw new Error(`expected 402, got ${unpaid.statusCode} ${challenge}`)
  const required = http.getPaymentRequiredResponse(n => unpaid.headers[n.toLowerCase()], JSON.parse(challenge))
  const paidHeaders = http.encodePaymentSignatureHeader(await client.createPaymentPayload(required))
  const bought = await request(`${url}/upload/tickets`, { method: 'POST', headers: { ...sizeHeaders, ...paidHeaders } })
  const ticket = JSON.parse(await bought.body.text())
  if (bought.statusCode !== 201) throw new Error(`ticket purchase failed: ${bought.statusCode} ${JSON.stringify(ticket)}`)
  const boughtMs = performance.now() - t0
  const up = await multipartPost(`${url}/upload`, bytes, { 'x-upload-ticket': ticket.ticket, authorization: `Bearer ${bought.headers['x-wallet-auth-token']}` })
  const text = await up.body.text()
  if (up.statusCode !== 201) throw new Error(`upload with a ticket failed: ${up.statusCode} ${text}`)
  return { ms: performance.now() - t0, boughtMs, body: JSON.parse(text) }
}
