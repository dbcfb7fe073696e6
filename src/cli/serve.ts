/**
 * `pind serve`: start the daemon (telling systemd how the start goes, so that
 * a long one is not killed), print the start-up summary (and log it as one
 * line), tell systemd it is ready, and stop gracefully on SIGINT/SIGTERM (a
 * second signal exits at once).
 */
import type { Config } from '../config/settings.js'
import { startDaemon } from '../app/daemon.js'
import { DataDirLockedError } from '../datadir/lock.js'
import { BlockstoreRecordError } from '../datadir/blockstore-record.js'
import { BackendChoiceError } from '../ipfs/open-backend.js'
import { LedgerChoiceError } from '../app/open-ledger.js'
import { LedgerRecordError } from '../datadir/ledger-record.js'
import { LedgerSchemaError } from '../ledger/errors.js'
import { S3ConfigError } from '../ipfs/s3-settings.js'
import { applyRuntime, RuntimeSettingError, type RuntimeTuning } from '../runtime/apply.js'
import type { Logger } from '../kernel/log.js'
import { StartupError } from '../app/startup-errors.js'
import { codeLoad, codeLoaded } from '../app/code-loaded.js'
import { STOP_STEPS_MS, stopWithin } from '../app/lifecycle.js'
import { COMMIT, VERSION } from '../kernel/version.js'
import { notifyServiceManager, startupReporter } from './notify.js'

/** how long a stop waits, at most, for systemd to have read STOPPING=1 */
const STOPPING_NOTIFY_MS = 2000

export async function serve (config: Readonly<Config>, log: Logger): Promise<void> {
  // A fault nothing caught (an exception, or a rejection nothing handles) still stops the process,
  // as node does by default: what it left half-done is recovered at the next start (staged uploads
  // removed, settlement notes reconciled). The monitor only says so first, as a log line an
  // operator's log shipper reads, instead of node's bare stack on stderr alone.
  process.on('uncaughtExceptionMonitor', (err, origin) => {
    const error = err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { message: String(err) }
    log.error('stopping on an uncaught error', { origin, error })
  })
  // the runtime tuning the operator asked for (--runtime-*; docs/runtime.md)
  let runtime: RuntimeTuning
  try {
    runtime = applyRuntime(config, { log })
  } catch (err) {
    if (!(err instanceof RuntimeSettingError)) throw err
    process.stderr.write(`pind: ${err.message}\n`)
    process.exit(2)
  }
  // under systemd, a long start (a ledger upgrade) asks for more time as long as it progresses
  const starting = startupReporter(log)
  // where the start's time went, for the 'serving' line: the code's loading (process start to
  // here), then each step startDaemon reports (an upgrade's repeated reports count as one step)
  const startup = { loadMs: Math.round(performance.now()), steps: [] as Array<[string, number]> }
  let step: [string, number] = ['starting', performance.now()]
  const endStep = (): void => {
    const name = step[0].replace(/: [\d,]+ records$/, '')
    const ms = Math.round(performance.now() - step[1])
    const last = startup.steps.at(-1)
    if (last?.[0] === name) last[1] += ms
    else startup.steps.push([name, ms])
  }
  let daemon
  try {
    daemon = await startDaemon(config, log, {
      onProgress: (status) => {
        endStep()
        step = [status, performance.now()]
        starting.report(status)
      },
      runtimeCollections: () => runtime.collections(),
      runtimeMallocTrims: () => runtime.mallocTrims(),
      runtimeMapTrims: () => runtime.mapTrims()
    })
    endStep()
  } catch (err) {
    if (err instanceof DataDirLockedError || err instanceof StartupError) {
      process.stderr.write(`pind: ${err.message}\n`)
      process.exit(1)
    }
    // the block store or the ledger is misconfigured (credentials, bucket, database, a data dir recorded for another store)
    if (err instanceof BackendChoiceError || err instanceof S3ConfigError || err instanceof BlockstoreRecordError || err instanceof LedgerChoiceError || err instanceof LedgerRecordError || err instanceof LedgerSchemaError) {
      process.stderr.write(`pind: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
  const payments = daemon.payments()
  const settler = 'settler' in payments && payments.settler != null
    ? `  settler:    ${payments.settler}${payments.settlerBalanceWei != null ? ` (${payments.settlerBalanceWei} wei)` : ''}`
    : undefined
  // every accepted network (the single-network settings first), each with its state
  const nets = 'networks' in payments ? payments.networks : []
  const summary = [
    `pind ${VERSION} serving`,
    `  http:       ${daemon.url}`,
    ...(daemon.publicUrl !== daemon.url ? [`  public url: ${daemon.publicUrl}`] : []),
    `  peer id:    ${daemon.peerId}`,
    ...daemon.multiaddrs.map((ma, i) => `  ${i === 0 ? 'libp2p:    ' : '           '} ${ma}`),
    `  data dir:   ${daemon.dataDir}`,
    `  ledger:     ${daemon.ledger}`,
    `  blocks:     ${daemon.blocks}`,
    `  network:    ${nets.length > 0 ? nets.map(n => `${n.network} (${n.state})`).join(', ') : config.network}`,
    `  pay to:     ${config.payTo ?? '(not configured: paid writes answer 503)'}`,
    `  payments:   ${payments.state}${payments.ok ? '' : ` (${payments.message})`}`,
    ...(settler != null ? [settler] : [])
  ]
  process.stdout.write(summary.join('\n') + '\n')
  // the same as one log line (journald, log shippers)
  log.notice('serving', {
    version: VERSION,
    commit: COMMIT,
    pid: process.pid,
    url: daemon.url,
    publicUrl: daemon.publicUrl,
    peerId: daemon.peerId,
    multiaddrs: daemon.multiaddrs,
    dataDir: daemon.dataDir,
    network: config.network,
    networks: nets.map(n => ({ network: n.network, state: n.state })),
    payTo: config.payTo ?? null,
    payments: payments.state,
    runtime: runtime.active,
    startup: { ms: Math.round(performance.now()), loadMs: startup.loadMs, ...codeLoad(), steps: Object.fromEntries(startup.steps) },
    ...('settler' in payments && payments.settler != null ? { settler: payments.settler, settlerBalanceWei: payments.settlerBalanceWei ?? null } : {})
  })
  await starting.done()
  void notifyServiceManager({ READY: '1', STATUS: `serving ${daemon.url}; payments ${payments.state}` }, log)

  let stopping = false
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      log.warn('second signal: exiting now', { signal })
      process.exit(signal === 'SIGINT' ? 130 : 143)
    }
    stopping = true
    runtime.stop()
    log.notice('stopping', { signal })
    // awaited (up to STOPPING_NOTIFY_MS) before exiting: serve may stop before the systemd-notify child
    // has sent it, and the child dies with the unit's cgroup
    const told = notifyServiceManager({ STOPPING: '1' }, log)
    const deadlineMs = config.shutdownTimeout * 1000
    const drainMs = config.shutdownDrain * 1000
    // the drain comes first and is not part of the stop's budget: it only waits, serving as before
    const drained = drainMs > 0
      ? new Promise<void>(resolve => {
        daemon.drain()
        log.notice('draining', { seconds: config.shutdownDrain })
        setTimeout(resolve, drainMs)
      })
      : Promise.resolve()
    drained.then(async () => await stopWithin(async () => { await daemon.stop(deadlineMs) }, deadlineMs + STOP_STEPS_MS, () => daemon.stopping(), log)).then(async (outcome) => {
      if (outcome === 'gave up') process.exit(1)
      await Promise.race([told, new Promise(resolve => setTimeout(resolve, STOPPING_NOTIFY_MS).unref())])
      log.notice('stopped')
      process.exit(0)
    }, (err: unknown) => {
      log.error('error while stopping', { error: err })
      process.exit(1)
    })
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  // the binary's code cache of serve's start, if it has none, now that the start's code has run
  // (the functions of the ledger's opening, libp2p's start and the listeners too), then the one
  // V8 flag set at run time: a cache made under changed flags is rejected at the next start
  codeLoaded()
  runtime.serving()
}
