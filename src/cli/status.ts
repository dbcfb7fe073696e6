/**
 * `pind status`: pins by status, bytes stored, disk free, revenue by month,
 * settlement notes; from a running serve also its uptime, peers and
 * payments. Through the admin socket, or on a stopped data dir.
 */
import type { Command } from 'commander'
import { callAdmin } from '../admin/client.js'
import { describeVia, runAdmin, writeResult } from './admin-target.js'
import { configFromCli } from './config-from-cli.js'
import { fail } from './fail.js'
import { mib } from './progress.js'
import { openLocalBackend } from './local-backend.js'
import type { BlockBackend } from '../ipfs/block-backend.js'
import type { DataDirLayout } from '../datadir/layout.js'

export function statusCommand (program: Command): void {
  program.command('status')
    .description('pins by status, bytes stored, disk free, revenue by month and by network, peers, payments and settlement notes')
    .option('--json', 'print JSON')
    .addHelpText('after', `
Works on a running serve (through its admin socket: adds uptime, peers and whether payments work)
or on a stopped data dir.

Examples:
  pind status
  sudo -u pind pind status --data-dir /var/lib/pind --json | jq .revenue
`)
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const config = configFromCli(cmd, 'admin')
      try {
        const out = await runAdmin(config, 'status', {
          viaServe: async (socket) => await callAdmin(socket, '/status', {}),
          locally: async ({ core }) => {
            const { operatorStatus } = await import('../service/admin/status.js')
            return await operatorStatus({ ledger: core.ledger, dataDir: core.paths.root, usage: async () => await core.usage.current().catch(() => ({ blocks: 0, bytes: 0 })) })
          },
          // counted where the blocks are (blocks/, or the bucket the data dir records); a store that
          // cannot be reached counts as empty rather than failing the whole status
          blocks: async (paths) => await openLocalBackend(config, paths).catch(async () => await emptyStore(paths))
        })
        writeResult(out, o.json === true, text)
        process.stderr.write(`pind status: ${describeVia(out.how, config.dataDir)}\n`)
      } catch (err) {
        fail('status', err)
      }
    })
}

type Obj = Record<string, any>

function text (r: Obj): string {
  const p = r.pins as Obj
  const s = r.storage as Obj
  const lines: string[] = []
  const serve = r.serve as Obj | null
  if (serve != null) {
    lines.push(`serve:      running (pid ${serve.pid}, pind ${serve.version}, up ${duration(serve.uptimeSeconds)}) at ${serve.url}`)
    lines.push(`peer id:    ${serve.peerId}; ${serve.peers.connected} peer(s) connected${serve.peers.connected > 0 ? `: ${(serve.peers.list as Obj[]).slice(0, 5).map(x => x.peer).join(', ')}${serve.peers.connected > 5 ? ', …' : ''}` : ''}`)
    const pay = serve.payments as Obj
    const balance = pay.settlerBalanceWei != null ? `; settler ${pay.settler} holds ${eth(pay.settlerBalanceWei)} ETH` : pay.settler != null ? `; settler ${pay.settler}` : ''
    lines.push(`payments:   ${pay.state}${pay.ok === true ? '' : ' (paid writes do not work)'}: ${pay.message}${balance}`)
    const nets = (pay.networks ?? []) as Obj[]
    if (nets.length > 1) {
      for (const x of nets) lines.push(`  ${x.network}  ${x.state}${x.settler != null ? `; settler ${x.settler}${x.settlerBalanceWei != null ? ` holds ${eth(x.settlerBalanceWei)} ETH` : ''}` : ''}${x.ok === true ? '' : `: ${x.message}`}`)
    }
  } else {
    lines.push('serve:      not running (figures read from the data dir)')
  }
  lines.push(`pins:       ${p.pinned} pinned, ${p.queued} queued, ${p.pinning} pinning, ${p.failed} failed${p.takenDown > 0 ? ` (${p.takenDown} taken down)` : ''}, ${p.expired} expired (in grace), ${p.removed} removed`)
  lines.push(`stored:     ${s.blocks} blocks, ${mib(s.bytes)}; disk free ${s.diskFreeBytes == null ? 'unknown' : `${mib(s.diskFreeBytes)} of ${mib(s.diskTotalBytes)}`}`)
  const rev = r.revenue as Obj
  lines.push(`revenue:    ${rev.totalUsdc} USDC in all`)
  for (const m of rev.byMonth as Obj[]) lines.push(`  ${m.month}  ${String(m.usdc).padStart(14)} USDC  ${m.payments} payment(s)`)
  const byNetwork = (rev.byNetwork ?? []) as Obj[]
  if (byNetwork.length > 1) for (const m of byNetwork) lines.push(`  ${m.network}  ${String(m.usdc).padStart(14)} USDC  ${m.payments} payment(s)`)
  const n = r.settlementNotes as Obj
  const open = n.unchecked + n['unused-pending'] + n['paid-unfulfilled']
  const fronts = r.frontEnds as Obj[]
  if (fronts.length > 0) {
    lines.push(`front ends: ${fronts.length} recorded in this ledger`)
    for (const f of fronts) lines.push(`  ${f.id} at ${f.url}, seen ${f.seenAt}${f.leases.length > 0 ? `; runs ${(f.leases as string[]).join(', ')}` : ''}`)
  }
  lines.push(`settlement notes: ${open === 0 ? 'none' : `${n.unchecked} unchecked, ${n['unused-pending']} unused-pending, ${n['paid-unfulfilled']} paid-unfulfilled (${n.paidUnfulfilledUsdc} USDC: refund or re-pin, then pind settlements close)`}`)
  return lines.join('\n')
}

function duration (s: number): string {
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.floor(s / 60)} min` : s < 172800 ? `${Math.floor(s / 3600)} h` : `${Math.floor(s / 86400)} d`
}

function eth (wei: string): string {
  const w = BigInt(wei)
  const whole = w / 10n ** 18n
  const frac = (w % 10n ** 18n).toString().padStart(18, '0').slice(0, 6)
  return `${whole}.${frac}`
}

/** what status counts when the data dir's block store cannot be reached: nothing */
async function emptyStore (paths: DataDirLayout): Promise<BlockBackend> {
  const { FsBackend } = await import('../ipfs/fs-backend.js')
  const fs = new FsBackend(paths.blocks)
  return Object.assign(Object.create(fs) as BlockBackend, { usage: async () => ({ blocks: 0, bytes: 0 }) })
}
