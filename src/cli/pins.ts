/**
 * `pind pins …`: the operator's view of every owner's pins, and takedowns.
 * `ls` takes GET /pins's filters (and --owner); `rm` takes a pin down by
 * requestid, or every pin of a CID, recording a reason the owner sees in
 * the pin's status_details. Through a running serve's admin socket, or on a
 * stopped data dir.
 */
import type { Command } from 'commander'
import { callAdmin } from '../admin/client.js'
import type { OperatorPinStatus, PinsOp, PinsReply } from '../service/admin/pins-admin.js'
import { describeVia, runAdmin, type Via, writeResult } from './admin-target.js'
import { configFromCli } from './config-from-cli.js'
import { fail, usage } from './fail.js'

interface LsFlags { owner?: string, cid?: string, name?: string, match?: string, status?: string, before?: string, after?: string, limit?: string, meta?: string[], json?: boolean }

export function pinsCommand (program: Command): void {
  const pins = program.command('pins')
    .description('every owner\'s pins: list them with the filters of GET /pins, take them down')
    .addHelpText('after', `
Works on a running serve (through its admin socket) or on a stopped data dir.

Examples:
  pind pins ls                                   (the newest 10 pinned pins of any owner)
  pind pins ls --status queued,pinning,pinned,failed --limit 100
  pind pins ls --owner 0xAbC… --name report --match ipartial
  pind pins ls --cid bafy… --json
  pind pins rm bafy… --reason "DMCA notice 2026-114"          (every pin of that CID)
  pind pins rm 1f0c…-…-… --reason "malware reported by abuse@"  (one pin, by requestid)
`)

  pins.command('ls').description('list pins of any owner, newest first, with the filters of GET /pins')
    .option('--owner <address>', 'only this owner\'s pins (0x address, any case)')
    .option('--cid <cids>', '1-10 CIDs, comma-separated (v0 and v1 match alike)')
    .option('--name <name>', 'pin name to match (see --match)')
    .option('--match <how>', 'exact (default), iexact, partial, ipartial')
    .option('--status <list>', 'queued, pinning, pinned, failed, comma-separated (default pinned, as GET /pins)')
    .option('--before <time>', 'created before this RFC 3339 time')
    .option('--after <time>', 'created after this RFC 3339 time')
    .option('--limit <n>', '1-1000 (default 10)')
    .option('--meta <key=value>', 'meta entry to match (repeatable)', (v: string, all: string[] = []) => [...all, v])
    .option('--json', 'print JSON: {count, results: [PinStatus + owner]}')
    .action(async (o: LsFlags, cmd: Command) => {
      const query: Record<string, string | string[]> = {}
      for (const k of ['cid', 'name', 'match', 'status', 'before', 'after', 'limit'] as const) if (o[k] != null) query[k] = o[k] as string
      for (const m of o.meta ?? []) {
        const at = m.indexOf('=')
        if (at <= 0) usage('pins', `--meta takes key=value, not "${m}"`)
        query[`meta[${m.slice(0, at)}]`] = m.slice(at + 1)
      }
      await run('ls', cmd, { op: 'ls', query, ...(o.owner != null ? { owner: o.owner } : {}) }, printList)
    })

  pins.command('rm <target>').description('take down a pin (requestid) or every pin of a CID: failed with your reason in status_details, no longer served')
    .requiredOption('--reason <text>', 'why; the owner sees it in the pin\'s status_details (e.g. "DMCA notice 2026-114")')
    .option('--json', 'print JSON')
    .addHelpText('after', `
The pin stays visible to its owner as status "failed", info.status_details "removed by the operator
on <time>: <reason>", until it would have expired. Its blocks are released at once: the gateway stops
serving them (unless another live pin holds the same content) and the next "pind gc" deletes them.
`)
    .action(async (target: string, o: { reason: string }, cmd: Command) => {
      await run('rm', cmd, { op: 'rm', target, reason: o.reason }, (r) => {
        const removed = r.removed as OperatorPinStatus[]
        const still = r.stillServedBy as string[]
        const lines = removed.map(p => `took down ${p.requestid}  ${p.pin.cid}  owner ${p.owner}`)
        lines.push(still.length === 0
          ? 'its content is no longer served; run pind gc to delete the blocks'
          : `the same CID is still served by ${still.length} other live pin(s): ${still.join(', ')} (pind pins rm <cid> takes down every pin of it)`)
        return lines.join('\n')
      })
    })
}

async function run (name: string, cmd: Command, op: PinsOp, print: (r: PinsReply) => string): Promise<void> {
  const config = configFromCli(cmd, 'admin')
  const json = cmd.opts<{ json?: boolean }>().json === true
  let out: { result: PinsReply, how: Via }
  try {
    out = await runAdmin(config, `pins ${name}`, {
      viaServe: async (socket) => await callAdmin(socket, '/pins', op),
      locally: async ({ core }) => {
        const { runPinsOp } = await import('../service/admin/pins-admin.js')
        return await runPinsOp(op, { ledger: core.ledger.pins })
      }
    })
  } catch (err) {
    fail(`pins ${name}`, err)
    return
  }
  writeResult(out, json, print)
  process.stderr.write(`pind pins ${name}: done ${describeVia(out.how, config.dataDir)}\n`)
}

function printList (r: PinsReply): string {
  const results = r.results as OperatorPinStatus[]
  const lines = [`${String(r.count)} pin(s) match${results.length < Number(r.count) ? `; the newest ${results.length} shown (--limit, --before)` : ''}`]
  if (results.length > 0) lines.push('REQUESTID                             STATUS   OWNER                                       CREATED                      PINNED UNTIL              SIZE        CID  NAME')
  for (const p of results) {
    lines.push(`${p.requestid.padEnd(37)} ${p.status.padEnd(8)} ${p.owner.padEnd(43)} ${p.created.padEnd(28)} ${String(p.info.pinned_until).padEnd(25)} ${String(p.info.dag_size ?? p.info.max_bytes ?? '-').padEnd(11)} ${p.pin.cid}${p.pin.name != null ? `  ${p.pin.name}` : ''}`)
    if (p.status === 'failed' || p.status === 'queued') lines.push(`  ${String(p.info.status_details)}`)
  }
  return lines.join('\n')
}
