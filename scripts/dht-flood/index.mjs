// A peer with a fresh identity floods a pind DHT server
// with ADD_PROVIDER, and this measures what it costs pind. The attacker is a
// real libp2p node on 127.0.0.1 that speaks /ipfs/kad/1.0.0 with kad-dht's
// own protobuf Message codec, one stream, messages length-prefixed as
// kad-dht and Kubo send them. The phases:
//
//   undialable  10 messages, each naming the attacker with 1,000 new
//               loopback quic-v1 / ws / webrtc-direct addresses (transports
//               pind never dials): the issue's flood
//   huge        one message with 40,000 such addresses (~500 KB)
//   bomb        one message with 2,000,000 empty addresses (4 MB)
//               (pind is expected to cut the stream of each of these two; the
//               next phase goes on a new stream)
//   dialable    10 messages of 1,000 new loopback TCP addresses each (what a
//               --routing-private-addresses server could dial)
//   burst       `burst` messages for as many new CIDs, one TCP address each
//
// After each phase a PING on the same stream: kad-dht handles a stream's
// messages in order, so its reply means every message before it was handled.
// Meanwhile, and for a second after each phase, /health is asked every 20 ms
// from a worker thread (its slowest answer is the stall), and pind's RSS is
// read before the flood and after each phase.
//
// As a script it starts the built bundle (dist/pind.cjs, on the pinned Node)
// as a DHT server on loopback, runs the flood, prints the figures and checks
// the issue's targets (/health under 100 ms, RSS growth under 10 MiB): exit 1
// when one is missed.
//   node scripts/dht-flood/index.mjs [--burst 3000]
import { readFileSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import { identify } from '@libp2p/identify'
import { noise } from '@libp2p/noise'
import { peerIdFromString } from '@libp2p/peer-id'
import { tcp } from '@libp2p/tcp'
import { lpStream } from '@libp2p/utils'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'

// kad-dht does not export its codec (package.json "exports"): load its module by path
const { Message, MessageType } = await import(new URL('../../node_modules/@libp2p/kad-dht/dist/src/message/dht.js', import.meta.url).href)

export const AMINO = '/ipfs/kad/1.0.0'
/** the issue's targets */
export const TARGETS = { healthMs: 100, rssGrowthMiB: 10 }

const UNDIALABLE = [
  (i) => `/ip4/127.0.0.1/udp/${i}/quic-v1`,
  (i) => `/ip4/127.0.0.1/tcp/${i}/ws`,
  (i) => `/ip4/127.0.0.1/udp/${i}/webrtc-direct`
]

/** `n` new addresses from `start` on, of the given kinds in turn, as bytes */
function addresses (kinds, start, n) {
  const out = []
  for (let i = 0; i < n; i++) {
    const k = start + i
    // a port and an IPv4 address per address, so that none repeats across phases
    const port = 1024 + (k % 60_000)
    const host = `127.${1 + Math.floor(k / 60_000) % 250}.0.1`
    out.push(multiaddr(kinds[k % kinds.length](port).replace('127.0.0.1', host)).bytes)
  }
  return out
}

async function cidOf (text) {
  return CID.createV1(0x55, await sha256.digest(new TextEncoder().encode(text)))
}

/** The RSS of a process, in MiB (VmRSS). */
export function rssMiB (pid) {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024
}

/**
 * Asks `url` every `everyMs` from a worker thread (the attacker's own work in
 * this thread must not delay the answers it times) until stopped; `mark()`
 * ends a phase and resolves with its slowest answer (a failed one counts its
 * time too) and the number of answers.
 */
function watchHealth (url, everyMs = 20) {
  const worker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads')
    let times = []
    let stopped = false
    let askedAt
    parentPort.on('message', (m) => {
      // a question still unanswered counts what it has waited so far: a pind that stopped answering shows as a stall
      const sorted = [...times, ...(askedAt !== undefined ? [performance.now() - askedAt] : [])].sort((a, b) => a - b)
      times = []
      if (m === 'stop') stopped = true
      parentPort.postMessage({ samples: sorted.length, maxMs: Math.round(sorted.at(-1) ?? 0), p50Ms: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0) })
    })
    ;(async () => {
      while (!stopped) {
        const t0 = askedAt = performance.now()
        try { await (await fetch(workerData.url, { signal: AbortSignal.timeout(60_000) })).arrayBuffer() } catch {}
        askedAt = undefined
        times.push(performance.now() - t0)
        await new Promise(resolve => setTimeout(resolve, workerData.everyMs))
      }
      process.exit(0)
    })()
  `, { eval: true, workerData: { url, everyMs } })
  // a worker that died or stopped answering fails the phase at once (its error, or after 30 s), never hangs the flood
  const ask = async (m) => {
    const reply = new Promise((resolve, reject) => {
      const timer = setTimeout(() => { cleanup(); reject(new Error(`the /health watcher did not answer "${m}" within 30 s`)) }, 30_000)
      const onMessage = (v) => { cleanup(); resolve(v) }
      const onError = (err) => { cleanup(); reject(err) }
      const cleanup = () => { clearTimeout(timer); worker.off('message', onMessage); worker.off('error', onError) }
      worker.on('message', onMessage)
      worker.on('error', onError)
    })
    worker.postMessage(m)
    return await reply
  }
  return {
    mark: async () => await ask('mark'),
    // the last figures, then the worker ends at once (not after a question pind may never answer)
    stop: async () => {
      const last = await ask('stop')
      await worker.terminate()
      return last
    },
    terminate: () => worker.terminate()
  }
}

/**
 * Runs the flood against a running pind DHT server: `target` its libp2p
 * multiaddr (with /p2p/), `healthUrl` its /health, `pid` its process (for
 * RSS). Resolves with the report: per phase the messages sent and the time
 * until pind had handled them, the slowest /health, the RSS before and after,
 * and the addresses pind returns for the attacker in GET_PROVIDERS. Every
 * step (a dial, a new stream, a phase, the question after) is bounded by
 * `phaseTimeoutMs`: a pind that stops answering fails a phase with the reason,
 * and `log` has each phase's line as soon as it ends.
 */
export async function addProviderFlood ({ target, healthUrl, pid, burst = 3000, phaseTimeoutMs = 120_000, log = () => {} }) {
  const node = await createLibp2p({ transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()], services: { identify: identify() } })
  const pind = peerIdFromString(multiaddr(target).getComponents().findLast(c => c.name === 'p2p').value)
  const self = node.peerId.toMultihash().bytes
  const report = { attacker: node.peerId.toString(), phases: [], health: undefined, rss: {}, addressesReturned: undefined, cids: {} }
  // every message is encoded before the flood starts: the attacker's own work must not fall inside a phase
  let nextAddr = 0
  let nextCid = 0
  const take = (kinds, n) => { const a = addresses(kinds, nextAddr, n); nextAddr += n; return a }
  const tcpAt = (i) => `/ip4/127.0.0.1/tcp/${i}`
  // [name, messages, whether pind is expected to cut the stream]
  const plan = [
    ['undialable', Array.from({ length: 10 }, () => take(UNDIALABLE, 1000)), false],
    ['huge', [take(UNDIALABLE, 40_000)], true],
    // 2 million empty addresses in one 4 MB message: what costs is decoding it
    ['bomb', [Array.from({ length: 2_000_000 }, () => new Uint8Array(0))], true],
    ['dialable', Array.from({ length: 10 }, () => take([tcpAt], 1000)), false],
    ...(burst > 0 ? [['burst', Array.from({ length: burst }, () => take([tcpAt], 1)), false]] : [])
  ]
  const phases = []
  for (const [name, messages, expectCut] of plan) {
    const cids = []
    const encoded = []
    for (const addrs of messages) {
      const cid = await cidOf(`dht-flood ${report.attacker} ${nextCid++}`)
      cids.push(cid.toString())
      encoded.push(Message.encode({ type: MessageType.ADD_PROVIDER, key: cid.multihash.bytes, closer: [], providers: [{ id: self, multiaddrs: addrs }] }))
    }
    report.cids[name] = cids
    phases.push({ name, encoded, expectCut, addresses: messages.reduce((n, a) => n + a.length, 0) })
  }
  let health
  try {
    await node.dial(multiaddr(target), { signal: AbortSignal.timeout(phaseTimeoutMs) })
    // kad-dht cuts a stream whose message takes longer than its timeout (10 s) to handle: each phase that fails goes on on a new one
    const open = async () => lpStream(await node.dialProtocol(pind, AMINO, { signal: AbortSignal.timeout(phaseTimeoutMs) }), { maxDataLength: 8 * 1024 * 1024 })
    let lp = await open()
    const ping = async (signal) => {
      await lp.write(Message.encode({ type: MessageType.PING, closer: [], providers: [] }), { signal })
      return Message.decode(await lp.read({ signal }))
    }
    // warm-up: the stream and pind's handler run once before the RSS is read
    await ping(AbortSignal.timeout(phaseTimeoutMs))
    health = watchHealth(healthUrl)
    await new Promise(resolve => setTimeout(resolve, 500))
    await health.mark()
    report.rss.beforeMiB = Math.round(rssMiB(pid) * 10) / 10

    let broken
    for (const { name, encoded, expectCut, addresses } of phases) {
      const t0 = performance.now()
      const signal = AbortSignal.timeout(phaseTimeoutMs)
      let error = broken != null ? `not run: ${broken}` : undefined
      let cut
      try {
        if (error != null) throw new Error(error)
        // in writes of 64 messages (the way pind's own announcer batches them)
        for (let i = 0; i < encoded.length; i += 64) await lp.writeV(encoded.slice(i, i + 64), { signal })
        await ping(signal)
        if (expectCut) cut = false
      } catch (err) {
        const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err?.type ?? err)
        // pind reset the stream, as expected: the next phase goes on a new one
        if (expectCut && error == null && err.name !== 'TimeoutError' && !signal.aborted) cut = why
        else error ??= why
        if (broken == null) lp = await open().catch((e) => { broken = `no new stream (${e.name}: ${e.message})`; return lp })
      }
      const ms = Math.round(performance.now() - t0)
      // the phase's slowest /health (a second past its end too: work pind left for later counts), and the RSS then
      await new Promise(resolve => setTimeout(resolve, 1000))
      const h = await health.mark()
      const p = { name, messages: encoded.length, addresses, handledMs: ms, healthMaxMs: h.maxMs, healthSamples: h.samples, rssMiB: Math.round(rssMiB(pid) * 10) / 10, ...(cut !== undefined ? { cut } : {}), ...(error != null ? { error } : {}) }
      report.phases.push(p)
      log(describePhase(p))
    }
    await health.stop()
    health = undefined
    // the issue's flood is every phase but the burst: its targets are checked on them (the burst has its own figures)
    const flood = report.phases.filter(p => p.name !== 'burst')
    report.health = { maxMs: Math.max(...flood.map(p => p.healthMaxMs)) }
    report.rss.afterMiB = flood.at(-1).rssMiB
    report.rss.growthMiB = Math.round((report.rss.afterMiB - report.rss.beforeMiB) * 10) / 10

    // what pind now tells anyone who asks who provides a CID of the dialable phase
    if (broken == null) {
      const first = CID.parse(report.cids.dialable[0])
      try {
        const signal = AbortSignal.timeout(phaseTimeoutMs)
        await lp.write(Message.encode({ type: MessageType.GET_PROVIDERS, key: first.multihash.bytes, closer: [], providers: [] }), { signal })
        const reply = Message.decode(await lp.read({ signal }))
        const mine = reply.providers.find(p => Buffer.from(p.id).equals(self))
        report.addressesReturned = mine?.multiaddrs.length ?? 0
        await lp.unwrap().close({ signal })
      } catch (err) {
        report.addressesReturned = `GET_PROVIDERS failed: ${err.name}: ${err.message}`
      }
    }
  } finally {
    await health?.terminate()
    // the attacker's own node: its stop waits on connections closing, bounded too
    let timer
    await Promise.race([node.stop(), new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`the attacker's libp2p node had not stopped after ${phaseTimeoutMs} ms`)), phaseTimeoutMs) })])
      .finally(() => clearTimeout(timer))
  }
  return report
}

/** Which of the issue's targets the report misses (empty: all met). */
export function missedTargets (report) {
  const missed = []
  if (!(report.health?.maxMs < TARGETS.healthMs)) missed.push(`/health took up to ${report.health?.maxMs} ms during the flood (target < ${TARGETS.healthMs} ms)`)
  for (const p of report.phases) {
    if (p.error != null) missed.push(`the ${p.name} phase failed: ${p.error}`)
    if (p.cut === false) missed.push(`the ${p.name} phase's stream was not cut: pind read its message whole`)
  }
  if (!(report.rss.growthMiB < TARGETS.rssGrowthMiB)) missed.push(`RSS grew ${report.rss.growthMiB} MiB (target < ${TARGETS.rssGrowthMiB} MiB)`)
  return missed
}

function describePhase (p) {
  return `${p.name}: ${p.messages} messages, ${p.addresses} addresses, handled in ${p.handledMs} ms; /health max ${p.healthMaxMs} ms (${p.healthSamples} asked); RSS after ${p.rssMiB} MiB${typeof p.cut === 'string' ? `; stream cut (${p.cut})` : ''}${p.error != null ? `; failed: ${p.error}` : ''}`
}

export function describe (report) {
  return [
    ...report.phases.map(describePhase),
    `the flood (every phase but the burst): /health max ${report.health?.maxMs} ms, RSS ${report.rss.beforeMiB} → ${report.rss.afterMiB} MiB (${report.rss.growthMiB >= 0 ? '+' : ''}${report.rss.growthMiB} MiB)`,
    `addresses pind returns for the attacker: ${report.addressesReturned}`
  ].join('\n')
}

/**
 * Starts the bundle (dist/pind.cjs on the pinned Node) as a DHT server on
 * loopback with `args` on a fresh data dir, bootstrapped to `bootstrap` (its
 * /health wants a DHT peer); resolves once /health answers.
 */
export async function startDhtServer ({ bootstrap, args = [], env = {} }) {
  const { spawn } = await import('node:child_process')
  const { mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const dataDir = mkdtempSync(join(tmpdir(), 'pind-dht-flood-'))
  const proc = spawn(new URL('../../node_modules/.bin/node', import.meta.url).pathname, [new URL('../../dist/pind.cjs', import.meta.url).pathname, 'serve', '--data-dir', dataDir, '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0',
    '--routing', 'dht', '--bootstrap', bootstrap.join(','), '--dht-mode', 'server', '--routing-private-addresses', '--p2p-inbound-rate', '10000', ...args], { env: { ...process.env, PIND_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  // the summary (stdout) names the URL and the addresses; the structured log (stderr) may name them too, inside JSON
  let summary = ''
  let out = ''
  proc.stdout.on('data', b => { summary += b; out += b })
  proc.stderr.on('data', b => { out += b })
  const stop = async () => {
    if (proc.exitCode == null && proc.signalCode == null) {
      const exited = new Promise(resolve => proc.on('exit', resolve))
      proc.kill('SIGTERM')
      await exited
    }
    rmSync(dataDir, { recursive: true, force: true })
  }
  const deadline = Date.now() + 60_000
  for (;;) {
    const url = /^\s+http:\s+(\S+)$/m.exec(summary)?.[1]
    const target = /(\/ip4\/\S+\/p2p\/\S+)/.exec(summary)?.[1]
    if (url != null && target != null) {
      try { if ((await fetch(`${url}/health`)).status === 200) return { url, target, pid: proc.pid, dataDir, stop } } catch {}
    }
    if (proc.exitCode != null || Date.now() > deadline) {
      await stop()
      throw new Error(`pind did not start:\n${out}`)
    }
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const burstAt = process.argv.indexOf('--burst')
  const burst = burstAt > 0 ? Number(process.argv[burstAt + 1]) : 3000
  const { startDhtNetwork } = await import('../dht-net/index.mjs')
  const net = await startDhtNetwork({ nodes: 3 })
  let code = 0
  const serve = await startDhtServer({ bootstrap: net.addrs(2) }).catch(async (err) => { await net.stop(); throw err })
  try {
    const report = await addProviderFlood({ target: serve.target, healthUrl: `${serve.url}/health`, pid: serve.pid, burst, log: (l) => { process.stderr.write(l + '\n') } })
    process.stdout.write(describe(report) + '\n')
    const missed = missedTargets(report)
    process.stdout.write(missed.length === 0 ? 'targets met\n' : `targets missed:\n  ${missed.join('\n  ')}\n`)
    code = missed.length === 0 ? 0 : 1
  } finally {
    await serve.stop()
    await net.stop()
  }
  process.exit(code)
}
