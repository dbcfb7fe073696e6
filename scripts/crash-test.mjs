#!/usr/bin/env node
/**
 * Crash test: concurrent paid uploads and pins by CID against the built
 * binary, `kill -9` at a random moment, restart on the same data dir, check,
 * repeat. After each restart:
 *   - the ledger opens (/health 200);
 *   - every acknowledged upload (201) and pin (202) is there, and its content
 *     hash-checks through the gateway (pins by CID are fetched to the end);
 *   - no pin exists without a settled payment (export-ledger: every pin has a
 *     settlement transaction);
 *   - every settlement note left by the kill is reconciled with the chain
 *     (`pind settlements check`: none stays unchecked), and none names a
 *     payment that was recorded;
 *   - a write whose payment settled but whose request was killed before
 *     recording it (a pin by CID, or an upload from its kept staging folder)
 *     is recorded by that reconciliation, with its settlement transaction,
 *     pinned, and holds a file that was sent: no paid note is left unfulfilled;
 *   - gc frees exactly the orphaned blocks: afterwards every block file is
 *     referenced and every referenced block exists (a dry run then finds
 *     scanned == marked and nothing to remove).
 * With --s3 (or `blockstore` from a test) the blocks live in an S3 bucket of a
 * throwaway Ceph RADOS Gateway (scripts/s3/): the same checks hold.
 * Usage: node scripts/crash-test.mjs [rounds=5] [concurrency=20] [--bundle] [--s3]
 */
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { privateKeyToAccount } from 'viem/accounts'
import { startDevChain } from './devchain/index.mjs'
import { startPeer } from './peer/index.mjs'

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))
const sha = (b) => createHash('sha256').update(b).digest('hex')

export async function runCrashTest ({ rounds = 5, concurrency = 20, bundle = false, log = console.log, blockstore = { args: [], env: {} } } = {}) {
  const cmd = bundle ? [process.execPath, join(ROOT, 'dist/pind.cjs')] : [join(ROOT, 'dist/pind')]
  const dataDir = mkdtempSync(join(tmpdir(), 'pind-crash-'))
  const chain = await startDevChain({ payers: 2 })
  const origin = await startPeer()
  const acked = [] // { kind, cid, hash, requestid, token }
  let orphansFreed = 0
  let fulfilledInAll = 0
  /** sha256 of every file sent: what a pin recorded from a settlement note must hold */
  const sent = new Set()
  const procs = new Set()
  const run = (args) => {
    const p = spawn(cmd[0], [...cmd.slice(1), ...args, '--data-dir', dataDir, ...blockstore.args], { env: { ...process.env, ...blockstore.env, PIND_SETTLER_KEY: chain.settlerKey }, stdio: ['ignore', 'pipe', 'pipe'] })
    procs.add(p)
    p.on('exit', () => procs.delete(p))
    let out = ''
    let err = ''
    p.stdout.on('data', b => { out += b })
    p.stderr.on('data', b => { err += b })
    const exit = new Promise(resolve => p.on('exit', code => resolve(code)))
    return { p, out: () => out, err: () => err, exit }
  }
  const serve = async () => {
    const s = run(['serve', '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0', '--token-issuer', 'crash-test',
      '--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--rate-limit-unpaid', '0', '--pin-stall-timeout', '2s', '--origin-addresses', 'any'])
    const deadline = Date.now() + 30_000
    for (;;) {
      if (s.p.exitCode != null) throw new Error(`pind exited at start: ${s.err()}`)
      if (Date.now() > deadline) throw new Error('pind did not start')
      const url = /^\s+http:\s+(\S+)$/m.exec(s.out())?.[1]
      if (url != null) {
        try { if ((await fetch(`${url}/health`)).status === 200) return { ...s, url } } catch {}
      }
      await new Promise(resolve => setTimeout(resolve, 20))
    }
  }
  const command = async (...args) => {
    const c = run(args)
    const code = await c.exit
    if (code !== 0) throw new Error(`pind ${args.join(' ')} exited ${code}: ${c.err()}`)
    return c.out()
  }
  const pay = chain.payers.map(p => wrapFetchWithPayment(fetch, x402Client.fromConfig({
    schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(p.privateKey))) }],
    spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: chain.usdc }] }
  })))

  try {
    for (let round = 1; round <= rounds; round++) {
      const s = await serve()
      // kill once a random number of the operations (under half) have finished, plus a random
      // moment: the rest are mid-upload, mid-settle, mid-commit or mid-fetch
      const target = Math.floor(Math.random() * Math.ceil(concurrency / 2))
      let finished = 0
      let reached
      const enough = new Promise(resolve => { reached = resolve })
      if (target === 0) reached()
      const ops = Array.from({ length: concurrency }, async (_, i) => {
        const bytes = randomBytes(50_000 + Math.floor(Math.random() * 2_000_000))
        sent.add(sha(bytes))
        try {
          if (i % 4 === 3) {
            const cid = await origin.addBytes(bytes)
            const r = await pay[i % 2](`${s.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid, origins: origin.multiaddrs() }) })
            if (r.status === 202) acked.push({ kind: 'pin', cid, hash: sha(bytes), requestid: (await r.json()).requestid, token: r.headers.get('x-wallet-auth-token') })
          } else {
            const form = new FormData()
            form.append('file', new Blob([bytes]), 'f.bin')
            const r = await pay[i % 2](`${s.url}/upload`, { method: 'POST', body: form })
            if (process.env.CRASH_DEBUG) log(`upload ${r.status}`)
            if (r.status === 201) acked.push({ kind: 'upload', cid: (await r.json()).cid, hash: sha(bytes) })
          }
        } catch (err) { if (process.env.CRASH_DEBUG) log(`op ${i}: ${err}`) } // cut off by the kill: not acknowledged
        if (++finished >= target) reached()
      })
      await enough
      // the others finish in bursts (settlements batch up): strike within a few ms, or, with
      // nothing finished yet, at a random moment of the first second
      await new Promise(resolve => setTimeout(resolve, target === 0 ? Math.random() * 1000 : Math.random() * 10))
      const atKill = finished
      s.p.kill('SIGKILL')
      await s.exit
      await Promise.allSettled(ops)

      const back = await serve()
      // settlements cut by the kill before their record was written left notes, which serve
      // reconciles with the chain in the background from its start; check runs after that pass
      const check = JSON.parse(await command('settlements', 'check', '--json'))
      if (check.error != null) throw new Error(`round ${round}: settlements check: ${check.error}`)
      const notes = JSON.parse(await command('settlements', 'list', '--json')).notes
      const unchecked = notes.filter(n => n.state === 'unchecked')
      if (unchecked.length > 0) throw new Error(`round ${round}: ${unchecked.length} settlement note(s) left unchecked after a reconciliation`)
      const paidUnfulfilled = notes.filter(n => n.state === 'paid-unfulfilled').length
      // writes whose payment settled but whose request was killed before recording them: recorded by
      // reconciliation (serve's pass at start, or the check), uploads from their kept staging folders
      const fulfilled = new Map((check.fulfilled ?? []).map(f => [f.requestid, f.cid]))
      for (const line of back.err().split('\n')) {
        if (line.includes('the pin it bought is recorded now')) {
          const l = JSON.parse(line)
          fulfilled.set(l.requestid, l.cid)
        }
      }
      fulfilledInAll += fulfilled.size
      const unfulfilled = notes.filter(n => n.state === 'paid-unfulfilled')
      if (unfulfilled.length > 0) throw new Error(`round ${round}: paid settlement notes were not fulfilled: ${unfulfilled.map(n => n.purpose).join(', ')}`)
      const fulfilDeadline = Date.now() + 60_000
      for (let waiting = [...fulfilled.keys()]; waiting.length > 0;) {
        const states = new Map((await command('export-ledger', '--records', 'pins')).trim().split('\n').map(l => JSON.parse(l)).filter(l => l.type === 'pin').map(l => [l.requestid, l.status]))
        waiting = waiting.filter(id => states.get(id) !== 'pinned')
        const failed = waiting.filter(id => states.get(id) === 'failed' || !states.has(id))
        if (failed.length > 0) throw new Error(`round ${round}: pin(s) recorded from settlement notes did not pin: ${failed.join(', ')}`)
        if (waiting.length > 0 && Date.now() > fulfilDeadline) throw new Error(`round ${round}: pin(s) recorded from settlement notes still not pinned: ${waiting.join(', ')}`)
        if (waiting.length > 0) await new Promise(resolve => setTimeout(resolve, 200))
      }
      for (const cid of fulfilled.values()) {
        const body = Buffer.from(await (await fetch(`${back.url}/ipfs/${cid}`)).arrayBuffer())
        if (!sent.has(sha(body))) throw new Error(`round ${round}: ${cid}, recorded from a settlement note, does not hold any file that was sent`)
      }
      // every acknowledged pin is there and hash-checks (pins by CID resume and finish)
      for (const a of acked) {
        if (a.kind === 'pin') {
          const deadline = Date.now() + 60_000
          for (;;) {
            const st = await (await fetch(`${back.url}/pins/${a.requestid}`, { headers: { authorization: `Bearer ${a.token}` } })).json()
            if (st.status === 'pinned') break
            if (st.status === 'failed' || Date.now() > deadline) throw new Error(`round ${round}: acknowledged pin ${a.requestid} is ${st.status}: ${st.info?.status_details}`)
            await new Promise(resolve => setTimeout(resolve, 50))
          }
        }
        const body = Buffer.from(await (await fetch(`${back.url}/ipfs/${a.cid}`)).arrayBuffer())
        if (sha(body) !== a.hash) throw new Error(`round ${round}: acknowledged ${a.kind} ${a.cid} does not hash-check after the crash`)
      }
      // no pin without a settled payment
      const lines = (await command('export-ledger', '--records', 'pins')).trim().split('\n').map(l => JSON.parse(l)).filter(l => l.type === 'pin')
      const unpaid = lines.filter(l => l.settlement_tx == null)
      if (unpaid.length > 0) throw new Error(`round ${round}: ${unpaid.length} pin(s) without a settled payment`)
      // a note outlives its request only when nothing was recorded for its payment
      const recorded = new Set(lines.map(l => l.payment_id))
      const stale = notes.filter(n => recorded.has(n.paymentId))
      if (stale.length > 0) throw new Error(`round ${round}: ${stale.length} settlement note(s) for payments that were recorded`)
      // gc frees exactly the orphans: afterwards every file is referenced and every reference has its file
      const gc = JSON.parse(await command('gc', '--json'))
      orphansFreed += gc.removedBlocks
      const dry = JSON.parse(await command('gc', '--dry-run', '--json'))
      if (dry.removedBlocks !== 0 || dry.scannedBlocks !== dry.markedBlocks) {
        throw new Error(`round ${round}: after gc, ${dry.scannedBlocks} block files vs ${dry.markedBlocks} referenced, ${dry.removedBlocks} still removable`)
      }
      log(`round ${round}: killed after ${atKill} of ${concurrency} operations had finished (${acked.length} acknowledged in all); ${lines.length} pins in the ledger, all paid; ${fulfilled.size} paid write(s) recorded from their settlement notes, pinned and hash-checked; ${notes.length} settlement note(s) left (${paidUnfulfilled} paid-unfulfilled, ${notes.length - paidUnfulfilled} unused-pending); gc freed ${gc.removedBlocks} orphaned blocks (${gc.freedBytes} bytes); ${dry.scannedBlocks} blocks left, all referenced; every acknowledged pin hash-checks`)
      back.p.kill('SIGTERM')
      await back.exit
    }
    return { rounds, acknowledged: acked.length, orphansFreed, fulfilled: fulfilledInAll }
  } finally {
    for (const p of procs) p.kill('SIGKILL')
    await origin.stop().catch(() => {})
    await chain.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const nums = args.filter(a => /^\d+$/.test(a)).map(Number)
  const s3 = args.includes('--s3') ? await (await import('./s3/index.mjs')).startS3() : undefined
  try {
    const blockstore = s3 != null
      ? { args: ['--blockstore', 's3', '--s3-endpoint', s3.endpoint, '--s3-bucket', await s3.createBucket(`crash-${Date.now()}`), '--s3-force-path-style'], env: s3.env() }
      : undefined
    const r = await runCrashTest({ rounds: nums[0] ?? 5, concurrency: nums[1] ?? 20, bundle: args.includes('--bundle'), ...(blockstore != null ? { blockstore } : {}) })
    console.log(`crash test passed${s3 != null ? ' (blocks in S3)' : ''}: ${r.rounds} kill -9 rounds, ${r.acknowledged} acknowledged writes, all intact; ${r.fulfilled} paid writes recorded from settlement notes, all pinned and intact`)
  } finally {
    await s3?.stop()
  }
}
