/**
 * `pind deny add|rm|ls|check`: the operator's takedowns. Through a running
 * serve's admin socket (applies at once: gateway 410, bitswap refuses, paid
 * writes 451), or on a stopped data dir (applies from the next start).
 */
import { userInfo } from 'node:os'
import type { Command } from 'commander'
import { callAdmin } from '../admin/client.js'
import type { DenyOp, DenyReply } from '../service/admin/deny-admin.js'
import { describeVia, runAdmin, writeResult, type Via } from './admin-target.js'
import { configFromCli } from './config-from-cli.js'
import { CliError, fail } from './fail.js'

type Rec = Record<string, unknown>

export function denyCommand (program: Command): void {
  const deny = program.command('deny')
    .description('takedowns: deny a CID or a path on every channel (gateway 410, bitswap, paid writes 451)')
    .addHelpText('after', `
Rules take a CID (any codec or version: a denial names its multihash), CID/path, /ipfs/CID[/path],
ipfs://CID[/path], /ipfs/CID/path* (every path starting so; /ipfs/CID/* = the CID and all paths) or
//<double hash> (IPIP-383). A path rule is for the gateway only: bitswap asks for blocks by CID, so
deny the CID a path leads to as well to stop peers fetching it. Pins of denied content stay in the
ledger, unserved; their owners see why in GET /pins. Denylist files (--denylist) are edited as files.

Works on a running serve (through its admin socket; applies at once) or on a stopped data dir.

Examples:
  pind deny add bafybei… --reason "DMCA notice 2026-0113"
  pind deny add /ipfs/bafybei…/private/* --reason "owner request"
  pind deny ls
  pind deny ls --history --json
  pind deny check /ipfs/bafybei…/a/b.jpg
  pind deny rm bafybei… --reason "counter-notice accepted"
`)

  deny.command('add <cid|path>').description('deny a CID (every channel) or a path under it (gateway)')
    .requiredOption('--reason <text>', 'why (kept in the ledger; shown to clients in 410/451 answers and to pin owners)')
    .option('--by <name>', 'who (default: SUDO_USER, else the login name)')
    .option('--json', 'print JSON')
    .action(async (target: string, o: { reason: string, by?: string }, cmd: Command) => {
      await run('add', cmd, { op: 'add', target, reason: o.reason, by: o.by ?? operatorName() }, printAdd)
    })

  deny.command('rm <cid|path>').description('lift a denial made with pind deny add')
    .option('--reason <text>', 'why (kept in the audit log)')
    .option('--by <name>', 'who (default: SUDO_USER, else the login name)')
    .option('--json', 'print JSON')
    .action(async (target: string, o: { reason?: string, by?: string }, cmd: Command) => {
      await run('rm', cmd, { op: 'rm', target, by: o.by ?? operatorName(), ...(o.reason != null ? { reason: o.reason } : {}) }, (r) => {
        const d = r.removed
        return `lifted the denial of ${String(d?.rule)} (added ${String(d?.at)} by ${String(d?.by)}: ${String(d?.reason)})`
      })
    })

  deny.command('ls').description('the denials in force (and, through a running serve, the denylist files it has loaded)')
    .option('--history', 'also every add and rm, with who, when and why')
    .option('--json', 'print JSON')
    .action(async (o: { history?: boolean }, cmd: Command) => {
      await run('ls', cmd, { op: 'ls', history: o.history === true }, printLs)
    })

  deny.command('check <cid|path>').description('is this CID (or path) denied, and by which rule?')
    .option('--denylist <paths>', 'on a stopped data dir: the denylists serve reads (env PIND_DENYLIST)')
    .option('--json', 'print JSON')
    .action(async (target: string, _o, cmd: Command) => {
      await run('check', cmd, { op: 'check', target }, (r) => {
        if (r.denied !== true) return `${String(r.target)} is not denied`
        const d = r.denial
        const where = d?.source === 'operator' ? `rule ${String(d.rule)}, added ${String(d.at)} by ${String(d.by)}` : `${String(d?.file)}:${String(d?.line)}`
        return `${String(r.target)} is denied: ${String(d?.message)} (${where})`
      })
    })
}

async function run (name: string, cmd: Command, op: DenyOp, print: (r: DenyReply) => string): Promise<void> {
  const config = configFromCli(cmd, 'admin', name === 'check' ? ['denylist'] : [])
  const json = cmd.opts<{ json?: boolean }>().json === true
  let out: { result: DenyReply, how: Via }
  try {
    out = await runAdmin(config, `deny ${name}`, {
      viaServe: async (socket) => await callAdmin(socket, '/deny', op),
      locally: async (c) => {
        const { runDenyOp } = await import('../service/admin/deny-admin.js')
        const { denials: ledger, pins } = c.core.ledger
        if (op.op !== 'check') return await runDenyOp(op, { ledger, pins })
        const { DenylistConfigError } = await import('../denylist/sources.js')
        try {
          return await runDenyOp(op, { ledger, pins, denials: await c.denials() })
        } catch (err) {
          if (err instanceof DenylistConfigError) throw new CliError(err.message)
          throw err
        }
      }
    })
  } catch (err) {
    // a refused operation (not a CID, no such denial) is a failure (1), as for pind keys; usage errors exit 2 before
    fail('deny', err)
    return
  }
  writeResult(out, json, print)
  const where = describeVia(out.how, config.dataDir)
  const when = out.how.via === 'serve' || name === 'ls' || name === 'check' ? '' : '; it applies when serve starts'
  process.stderr.write(`pind deny ${name}: done ${where}${when}\n`)
}

function printAdd (r: Rec): string {
  const a = r.added as Rec
  const pins = r.livePins as string[]
  const lines = [`denied ${String(a.rule)}: ${String(a.reason)}`]
  if (r.replaced != null) lines.push(`(it was denied already, since ${String((r.replaced as Rec).at)}: the reason is replaced)`)
  if (pins.length > 0) lines.push(`${pins.length} live pin(s) of it are no longer served (they stay in the ledger; their owners see why): ${pins.slice(0, 20).join(', ')}${pins.length > 20 ? ', …' : ''}`)
  if (r.gatewayOnly === true) lines.push('a path rule: the gateway refuses this path; bitswap serves blocks by CID, so deny the CID it leads to as well to stop peers fetching it')
  return lines.join('\n')
}

function printLs (r: Rec): string {
  const rules = r.rules as Rec[]
  const lines = [rules.length === 0 ? 'no denials by the operator' : `${rules.length} denial(s) by the operator:`]
  for (const d of rules) lines.push(`${String(d.at)}  ${String(d.by).padEnd(12)} ${String(d.rule)}  # ${String(d.reason)}`)
  const files = r.denylists as Rec[] | undefined
  if (files != null) {
    lines.push('', files.length === 0 ? 'no denylist files (--denylist)' : 'denylist files (the last one wins on conflict):')
    for (const f of files) lines.push(`${String(f.file)}: ${String(f.rules)} rules${Number(f.ipns) > 0 ? `, ${String(f.ipns)} /ipns/ rules (not used)` : ''}, ${String(f.skipped)} bad lines skipped, read ${String(f.loadedAt)} in ${String(f.ms)} ms${f.error != null ? `; LAST READ FAILED: ${String(f.error)}` : ''}`)
  }
  const history = r.history as Rec[] | undefined
  if (history != null) {
    lines.push('', history.length === 0 ? 'no history' : 'history:')
    for (const e of history) lines.push(`${String(e.at)}  ${String(e.op).padEnd(3)} ${String(e.by).padEnd(12)} ${String(e.rule)}${e.reason != null ? `  # ${String(e.reason)}` : ''}`)
  }
  return lines.join('\n')
}

/** who runs the command: the person behind sudo, else the login name */
function operatorName (): string {
  const sudo = process.env.SUDO_USER
  if (sudo != null && sudo !== '') return sudo
  try { return userInfo().username } catch { return 'unknown' }
}
