/**
 * `pind routing status`: where routing and the provide queue stand (through
 * a running serve's admin socket, or the schedule on a stopped data dir).
 */
import type { Command } from 'commander'
import { callAdmin } from '../admin/client.js'
import { settingDefault } from '../config/settings.js'
import type { RoutingReport } from '../service/admin/routing-admin.js'
import { describeVia, runAdmin, writeResult } from './admin-target.js'
import { configFromCli } from './config-from-cli.js'
import { fail } from './fail.js'

export function routingCommand (program: Command): void {
  const routing = program.command('routing')
    .description('content routing (DHT, delegated): status of the network and of the provide schedule')
  routing.command('status')
    .description('routing mode, routing table, CIDs announced, how many are due and how late the oldest is')
    .option('--json', 'print JSON')
    .addHelpText('after', `
Through a running serve it shows the live state; on a stopped data dir, the provide schedule
kept in the ledger (with the strategy and interval serve last ran with).

Examples:
  pind routing status
  pind routing status --data-dir /var/lib/pind --json
`)
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const config = configFromCli(cmd, 'admin')
      try {
        const out = await runAdmin(config, 'routing status', {
          viaServe: async (socket) => await callAdmin(socket, '/routing', {}),
          locally: async ({ core }) => {
            const { routingReport } = await import('../service/admin/routing-admin.js')
            const strategy = (core.recorded.provideStrategy ?? settingDefault('provideStrategy')) === 'all' ? 'blocks' : 'roots'
            const interval = core.recorded.reprovideInterval ?? settingDefault('reprovideInterval')
            return await routingReport({ keys: core.ledger.provides, strategy, intervalMs: interval * 1000 })
          }
        })
        writeResult(out, o.json === true, describe)
        process.stderr.write(`pind routing status: done ${describeVia(out.how, config.dataDir)}\n`)
      } catch (err) {
        fail('routing status', err)
      }
    })
}

function describe (r: RoutingReport): string {
  const n = r.network
  const p = r.provides
  const lines = [
    r.routing == null
      ? 'routing: (serve not running)'
      : r.routing.includes('none')
        ? 'routing: none (nothing is announced; only configured peers and origins are dialled)'
        : `routing: ${r.routing.join(', ')}${n?.mode != null ? ` (DHT ${n.mode})` : ''}; routing table ${n?.routingTable ?? 0} peers, ${n?.connections ?? 0} connections, ${n?.records ?? 0} records stored here${(n?.recordsDropped ?? 0) > 0 ? ` (${n?.recordsDropped ?? 0} refused: cap reached)` : ''}${(n?.recordsDroppedPeerShare ?? 0) > 0 ? ` (${n?.recordsDroppedPeerShare ?? 0} refused: the peer had its share)` : ''}`,
    `provides: ${p.strategy === 'blocks' ? 'all blocks' : 'roots'}, every ${p.intervalSeconds} s; ${p.keys} CIDs scheduled, ${p.pending} due now${p.pending > 0 ? ` (the oldest ${p.oldestPendingSeconds} s late)` : ''}${p.nextDueSeconds != null && p.pending === 0 ? `, next due in ${p.nextDueSeconds} s` : ''}`
  ]
  if (p.providedSinceStart != null) {
    lines.push(`since start: ${p.providedSinceStart} announced, ${p.failedSinceStart ?? 0} failed, ${p.regionsSinceStart ?? 0} regions, ${p.lookupsSinceStart ?? 0} lookups${p.pausedUntil != null ? `; paused until ${p.pausedUntil} (the DHT could not be queried)` : ''}`)
    const l = p.lastRegion
    if (l != null) lines.push(`last region: ${l.prefix === '' ? '(whole keyspace)' : l.prefix} at ${l.at}: ${l.provided} announced, ${l.failed} failed, ${l.reachable}/${l.peers} peers reached, ${l.lookups} lookups, ${l.ms} ms`)
  }
  return lines.join('\n')
}
