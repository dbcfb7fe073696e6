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
 *     recording it (a pin by CID, or an upload from its kept staging folder,
 *     or from its blocks in the bucket) is recorded by that reconciliation,
 *     with its settlement transaction, pinned, and holds a file that was
 *     sent: no paid note is left unfulfilled;
 *   - gc frees exactly the orphaned blocks: afterwards every block file is
 *     referenced and every referenced block exists (a dry run then finds
 *     scanned == marked and nothing to remove); with S3, blocks of an upload
 *     whose note is left (its payment may still settle) are kept besides.
 * With --s3 (or `blockstore` from a test) the blocks live in an S3 bucket of a
 * throwaway Ceph RADOS Gateway (scripts/s3/): the same checks hold.
 * With --front-ends 2 (or `frontEnds` and `database` from a test) two serves share
 * a PostgreSQL ledger (a throwaway cluster, scripts/postgres.mjs) and the bucket
 * (--s3 implied), each with its own data dir and settler key; the writes are
 * spread over both, each round kills one of them while the other keeps serving,
 * and the checks run through the survivor: it reconciles the dead one's notes
 * once it counts it gone (unseen for three beats), paid uploads' too (their
 * blocks are in the bucket: a paid upload with S3 writes them as its body
 * arrives); the killed one, started again, records any whose blocks it had
 * staged on its own disk (--upload-writes staged).
 * Usage: node scripts/crash-test.mjs [rounds=5] [concurrency=20] [--bundle] [--s3] [--front-ends 2]
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
import { startPostgres, stopPostgres } from './postgres.mjs'

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))
const sha = (b) => createHash('sha256').update(b).digest('hex')

export async function runCrashTest ({ rounds = 5, concurrency = 20, bundle = false, log = console.log, blockstore = { args: [], env: {} }, frontEnds = 1, database } = {}) {
  if (frontEnds > 2) throw new Error('--front-ends: 1 or 2 (the dev chain funds two settler keys)')
  if (frontEnds > 1 && (database == null || !blockstore.args.includes('s3'))) throw new Error('several front ends need a PostgreSQL ledger (database) and an S3 bucket (blockstore)')
  const cmd = bundle ? [process.execPath, join(ROOT, 'dist/pind.cjs')] : [join(ROOT, 'dist/pind')]
  const dataDirs = Array.from({ length: frontEnds }, (_, i) => mkdtempSync(join(tmpdir(), `pind-crash-${i + 1}-`)))
  const chain = await startDevChain({ payers: 2 })
  // each front end its own settler key (anvil accounts 1 and 0 hold ETH); a shared ledger, and reconciliation every 5 s
  const settlers = [chain.settlerKey, chain.deployerKey]
  const fleetArgs = database != null ? ['--ledger', 'postgres', '--database-url', database, ...(frontEnds > 1 ? ['--expiry-sweep-interval', '5s'] : [])] : []
  /** the front end whose data dir commands run on (through its admin socket while it runs) */
  let via = 0
  const origin = await startPeer()
  const acked = [] // { kind, cid, hash, requestid, token }
  let orphansFreed = 0
  let fulfilledInAll = 0
  /** sha256 of every file sent: what a pin recorded from a settlement note must hold */
  const sent = new Set()
  const procs = new Set()
  const run = (args, i = via) => {
    const p = spawn(cmd[0], [...cmd.slice(1), ...args, '--data-dir', dataDirs[i], ...blockstore.args], { env: { ...process.env, ...blockstore.env, PIND_SETTLER_KEY: settlers[i] }, stdio: ['ignore', 'pipe', 'pipe'] })
    procs.add(p)
    p.on('exit', () => procs.delete(p))
    let out = ''
    let err = ''
    p.stdout.on('data', b => { out += b })
    p.stderr.on('data', b => { err += b })
    const exit = new Promise(resolve => p.on('exit', code => resolve(code)))
    return { p, out: () => out, err: () => err, exit }
  }
  const serve = async (i = 0) => {
    const s = run(['serve', '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0', '--token-issuer', 'crash-test',
      '--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--rate-limit-unpaid', '0', '--pin-stall-timeout', '2s', '--origin-addresses', 'any', ...fleetArgs], i)
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
    const c = run(args, via)
    const code = await c.exit
    if (code !== 0) throw new Error(`pind ${args.join(' ')} exited ${code}: ${c.err()}`)
    return c.out()
  }
  const pay = chain.payers.map(p => wrapFetchWithPayment(fetch, x402Client.fromConfig({
    schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(p.privateKey))) }],
    spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: chain.usdc }] }
  })))

  /** the running front ends (several: they stay up across rounds, the killed one started again) */
  const fronts = []
  /** requestids recorded from settlement notes, as logged by any front end */
  const fulfilledSeen = new Set()
  try {
    for (let round = 1; round <= rounds; round++) {
      for (let i = 0; i < frontEnds; i++) fronts[i] ??= await serve(i)
      const victim = (round - 1) % frontEnds
      const s = fronts[victim]
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
            const r = await pay[i % 2](`${fronts[(i >> 2) % frontEnds].url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid, origins: origin.multiaddrs() }) })
            if (r.status === 202) acked.push({ kind: 'pin', cid, hash: sha(bytes), requestid: (await r.json()).requestid, token: r.headers.get('x-wallet-auth-token') })
          } else {
            const form = new FormData()
            form.append('file', new Blob([bytes]), 'f.bin')
            const r = await pay[i % 2](`${fronts[i % frontEnds].url}/upload`, { method: 'POST', body: form })
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
      fronts[victim] = undefined
      await Promise.allSettled(ops)

      let back
      if (frontEnds === 1) {
        back = fronts[0] = await serve(0)
      } else {
        via = (victim + 1) % frontEnds
        back = fronts[via]
        // the survivor leaves the dead one's notes alone until it counts it gone (three beats, 15 s)
        const deadline = Date.now() + 60_000
        while (JSON.parse(await command('settlements', 'check', '--json')).inFlight > 0) {
          if (Date.now() > deadline) throw new Error(`round ${round}: the survivor did not take the dead front end's settlement notes over`)
          await new Promise(resolve => setTimeout(resolve, 1000))
        }
        // started again, the killed one records the paid uploads it had staged (its own pass, without the lease)
        fronts[victim] = await serve(victim)
        via = victim
        await command('settlements', 'check', '--json')
        via = (victim + 1) % frontEnds
      }
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
      for (const line of fronts.map(f => f.err()).join('\n').split('\n')) {
        if (line.includes('the pin it bought is recorded now')) {
          const l = JSON.parse(line)
          if (!fulfilledSeen.has(l.requestid)) fulfilled.set(l.requestid, l.cid)
        }
      }
      for (const id of fulfilled.keys()) fulfilledSeen.add(id)
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
        const r = await fetch(`${back.url}/ipfs/${cid}`)
        const body = Buffer.from(await r.arrayBuffer())
        if (!sent.has(sha(body))) throw new Error(`round ${round}: ${cid}, recorded from a settlement note, does not hold any file that was sent (${r.status}: ${body.subarray(0, 200)})` + (frontEnds > 1 ? fronts.map((f, i) => `\nfront end ${i + 1} said of it:\n` + f.err().split('\n').filter(l => l.includes(cid)).join('\n').slice(-3000)).join('') : ''))
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
      // gc frees exactly the orphans: afterwards every file is referenced and every reference has its file.
      // An upload written straight to the bucket (S3) whose note is left (unused-pending: its payment may
      // still settle) keeps its blocks, unreferenced until then: kept by gc, never removable
      const gc = JSON.parse(await command('gc', '--json'))
      orphansFreed += gc.removedBlocks
      const dry = JSON.parse(await command('gc', '--dry-run', '--json'))
      const holding = notes.filter(n => String(n.purpose).startsWith('upload:')).length
      if (dry.removedBlocks !== 0 || dry.scannedBlocks !== dry.keptBlocks || (holding === 0 ? dry.scannedBlocks !== dry.markedBlocks : dry.scannedBlocks < dry.markedBlocks)) {
        throw new Error(`round ${round}: after gc, ${dry.scannedBlocks} block files vs ${dry.markedBlocks} referenced (${dry.keptBlocks} kept, ${holding} upload note(s) left), ${dry.removedBlocks} still removable`)
      }
      log(`round ${round}: killed${frontEnds > 1 ? ` front end ${victim + 1} of ${frontEnds}` : ''} after ${atKill} of ${concurrency} operations had finished (${acked.length} acknowledged in all); ${lines.length} pins in the ledger, all paid; ${fulfilled.size} paid write(s) recorded from their settlement notes, pinned and hash-checked; ${notes.length} settlement note(s) left (${paidUnfulfilled} paid-unfulfilled, ${notes.length - paidUnfulfilled} unused-pending); gc freed ${gc.removedBlocks} orphaned blocks (${gc.freedBytes} bytes); ${dry.scannedBlocks} blocks left, all referenced${dry.scannedBlocks > dry.markedBlocks ? ` or held by an upload's note (${dry.scannedBlocks - dry.markedBlocks})` : ''}; every acknowledged pin hash-checks`)
      if (frontEnds === 1 || round === rounds) {
        for (const [i, f] of fronts.entries()) { f.p.kill('SIGTERM'); await f.exit; fronts[i] = undefined }
      }
    }
    return { rounds, acknowledged: acked.length, orphansFreed, fulfilled: fulfilledInAll }
  } finally {
    for (const p of procs) p.kill('SIGKILL')
    await origin.stop().catch(() => {})
    await chain.stop()
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const at = args.indexOf('--front-ends')
  const frontEnds = at >= 0 ? Number(args.splice(at, 2)[1]) : 1
  const nums = args.filter(a => /^\d+$/.test(a)).map(Number)
  // several front ends share a PostgreSQL ledger and a bucket
  const s3 = args.includes('--s3') || frontEnds > 1 ? await (await import('./s3/index.mjs')).startS3() : undefined
  const pg = frontEnds > 1 ? await startPostgres() : undefined
  try {
    const blockstore = s3 != null
      ? { args: ['--blockstore', 's3', '--s3-endpoint', s3.endpoint, '--s3-bucket', await s3.createBucket(`crash-${Date.now()}`), '--s3-force-path-style'], env: s3.env() }
      : undefined
    const r = await runCrashTest({ rounds: nums[0] ?? 5, concurrency: nums[1] ?? 20, bundle: args.includes('--bundle'), frontEnds, ...(blockstore != null ? { blockstore } : {}), ...(pg != null ? { database: pg.url } : {}) })
    console.log(`crash test passed${pg != null ? ` (${frontEnds} front ends on PostgreSQL, blocks in S3)` : s3 != null ? ' (blocks in S3)' : ''}: ${r.rounds} kill -9 rounds, ${r.acknowledged} acknowledged writes, all intact; ${r.fulfilled} paid writes recorded from settlement notes, all pinned and intact`)
  } finally {
    if (pg != null) await stopPostgres({ dir: pg.dir, remove: true })
    await s3?.stop()
  }
}
