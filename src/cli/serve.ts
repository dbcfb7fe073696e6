/**
 * `pind serve`: start the daemon, print the start-up summary, and stop
 * gracefully on SIGINT/SIGTERM (a second signal exits at once).
 */
import type { Config } from '../config/settings.js'
import { startDaemon } from '../daemon.js'
import { DataDirLockedError } from '../datadir/lock.js'
import { holdYoungGeneration } from '../heap.js'
import type { Logger } from '../log.js'
import { VERSION } from '../version.js'

export async function serve (config: Readonly<Config>, log: Logger): Promise<void> {
  holdYoungGeneration()
  let daemon
  try {
    daemon = await startDaemon(config, log)
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      process.stderr.write(`pind: ${err.message}\n`)
      process.exit(1)
    }
    throw err
  }
  const summary = [
    `pind ${VERSION} serving`,
    `  http:       ${daemon.url}`,
    ...(daemon.publicUrl !== daemon.url ? [`  public url: ${daemon.publicUrl}`] : []),
    `  peer id:    ${daemon.peerId}`,
    ...daemon.multiaddrs.map((ma, i) => `  ${i === 0 ? 'libp2p:    ' : '           '} ${ma}`),
    `  data dir:   ${daemon.dataDir}`,
    `  network:    ${config.network}`,
    `  pay to:     ${config.payTo ?? '(not configured: paid writes answer 503)'}`
  ]
  process.stdout.write(summary.join('\n') + '\n')
  log.info('started', { url: daemon.url, peerId: daemon.peerId })

  let stopping = false
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      log.warn('second signal: exiting now', { signal })
      process.exit(signal === 'SIGINT' ? 130 : 143)
    }
    stopping = true
    log.info('stopping', { signal })
    daemon.stop(config.shutdownTimeout * 1000).then(() => {
      log.info('stopped')
      process.exit(0)
    }, (err: unknown) => {
      log.error('error while stopping', { error: err })
      process.exit(1)
    })
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
}
