/**
 * `pind settlements …`: settlement notes left by paid requests that never
 * recorded what they paid for (the process died in between): list them,
 * reconcile them against the chain now, close one an operator has dealt
 * with. Through a running serve's admin socket, or on a stopped data dir.
 */
import { Option, type Command } from 'commander'
import { callAdmin } from '../admin/client.js'
import { SETTINGS, type Config } from '../config/settings.js'
import type { SettlementsOp, SettlementsReply } from '../service/admin/settlements-admin.js'
import type { ReconcileReport } from '../service/payments/settlement-reconcile.js'
import { runAdmin, type Via, describeVia, writeResult } from './admin-target.js'
import { configFromCli, EXIT_USAGE } from './config-from-cli.js'
import { CliError, fail } from './fail.js'
import { openLocalBackend } from './local-backend.js'
import type { DataDirLayout } from '../datadir/layout.js'

/** what `check` reads the chain with on a stopped data dir (a running serve uses its own) */
const CHAIN_OPTIONS: ReadonlyArray<[keyof Config, string]> = [
  ['rpcUrl', 'EVM JSON-RPC URL to read the token\'s authorizationState from'],
  ['asset', 'the EIP-3009 token serve takes payments in'],
  ['network', 'the payment network']
]
const CHAIN_SETTINGS = CHAIN_OPTIONS.map(([key]) => key)

type Note = Record<string, string | null>

export function settlementsCommand (program: Command): void {
  const settlements = program.command('settlements')
    .description('settlement notes of payments whose pin or renewal was never recorded: list, reconcile with the chain, close')
    .addHelpText('after', `
A note is written before each payment is settled and removed with the pin or renewal it pays
for. A note that stays means the process died in between. Serve reconciles them in the
background (at start, then every 5 minutes) against the token's authorizationState:
  never used and no longer usable → dropped (the money never moved);
  still usable                    → unused-pending (read again later);
  used                            → fulfilled automatically: the pin or renewal the note holds
                                    is recorded with its payment, and the note goes;
  used, but it cannot be fulfilled (a staged block is missing, or the pin it replaces or
  renews was removed)             → paid-unfulfilled: refund or re-pin, then close it.
States: unchecked, unused-pending, paid-unfulfilled.

Works on a running serve (through its admin socket) or on a stopped data dir.

Examples:
  pind settlements list
  pind settlements list --closed --json
  pind settlements check                      (through a running serve: its RPC)
  pind settlements check --rpc-url https://rpc.mainnet.taiko.xyz    (stopped data dir)
  pind settlements close 0xabc…:0x12… --note "refunded in tx 0x9f…"
`)

  settlements.command('list').description('every settlement note: payment id, payer, amount, purpose, noted at, state, validBefore')
    .option('--closed', 'also the audit records of closed notes')
    .option('--json', 'print JSON')
    .action(async (o: { closed?: boolean }, cmd: Command) => {
      await run('list', cmd, { op: 'list', closed: o.closed === true }, printList)
    })

  const check = settlements.command('check').description('reconcile the notes with the chain now; prints what was dropped, what was paid and is now pinned, and what is paid-unfulfilled')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nThrough a running serve the check uses serve\'s RPC and asset; the chain options apply on a stopped data dir.\n')
  for (const [key, what] of CHAIN_OPTIONS) {
    const s = SETTINGS.find(x => x.key === key)
    if (s?.flag != null) check.addOption(new Option(s.flag, `${what} (env ${s.env})${s.default != null ? `; default ${String(s.default)}` : ''}`))
  }
  check.action(async (_o, cmd: Command) => {
    await run('check', cmd, { op: 'check' }, printCheck)
  })

  settlements.command('close <paymentId>').description('remove a note the operator has dealt with, keeping an audit record of the closure')
    .requiredOption('--note <text>', 'what was done, e.g. "refunded in tx 0x…" (kept in the audit record)')
    .option('--json', 'print JSON')
    .action(async (paymentId: string, o: { note: string }, cmd: Command) => {
      await run('close', cmd, { op: 'close', paymentId, note: o.note }, (r) => {
        const c = r.closed as Note
        return `closed ${String(c.paymentId)} (${String(c.amountUsdc)} USDC, ${String(c.purpose)}); audit record kept at ${String(c.closedAt)}: ${String(c.operatorNote)}`
      })
    })
}

async function run (name: string, cmd: Command, op: SettlementsOp, print: (r: SettlementsReply) => string): Promise<void> {
  const config = configFromCli(cmd, 'admin', name === 'check' ? CHAIN_SETTINGS : [])
  const json = cmd.opts<{ json?: boolean }>().json === true
  let out: { result: SettlementsReply, how: Via }
  try {
    out = await runAdmin(config, `settlements ${name}`, {
      viaServe: async (socket) => await callAdmin(socket, '/settlements', op),
      locally: async (c) => {
        const { runSettlementsOp } = await import('../service/admin/settlements-admin.js')
        const { core } = c
        const { notes } = core.ledger
        // a pin by CID recorded here is fetched by the next serve (it reads its fetch queue at start)
        const { fulfil, release } = core.settlement
        if (op.op !== 'check') return await runSettlementsOp(op, { notes, release })
        const chain = await c.chain()
        if (chain == null) throw new CliError('check on a stopped data dir reads the chain: give --rpc-url (or PIND_RPC_URL) and the --asset serve uses', EXIT_USAGE)
        const { reconcileSettlements } = await import('../service/payments/settlement-reconcile.js')
        const { silentLogger } = await import('../kernel/log.js')
        const reconcile = async (): Promise<ReconcileReport> => await reconcileSettlements(notes, chain, silentLogger, { fulfil, release })
        return await runSettlementsOp(op, { notes, reconcile, release })
      },
      // check commits a paid upload's kept blocks to the data dir's block store (blocks/, or its bucket);
      // list and close only read notes and remove staging folders
      ...(op.op === 'check' ? { blocks: async (paths: DataDirLayout) => await openLocalBackend(config, paths) } : {})
    })
  } catch (err) {
    fail('settlements', err)
    return
  }
  const where = describeVia(out.how, config.dataDir)
  writeResult(out, json, print)
  if (typeof out.result.error === 'string') {
    process.stderr.write(`pind settlements ${name}: ${out.result.error}; the notes not read were left as they were (${where})\n`)
    process.exitCode = 1
    return
  }
  process.stderr.write(`pind settlements ${name}: done ${where}\n`)
}

function line (n: Note): string {
  const validBefore = n.validBeforeAt ?? n.validBefore ?? 'unknown'
  const fulfils = typeof n.fulfils === 'string' ? `  recorded if paid: ${n.fulfils}` : ''
  return `${String(n.state).padEnd(16)} ${String(n.amountUsdc).padStart(12)} USDC  ${String(n.purpose)}  noted ${String(n.at)}  valid before ${validBefore}${n.network != null ? `  on ${String(n.network)}` : ''}  ${String(n.paymentId)}${fulfils}`
}

function printList (r: SettlementsReply): string {
  const notes = r.notes as Note[]
  const paid = notes.filter(n => n.state === 'paid-unfulfilled').length
  const lines = [notes.length === 0
    ? 'no settlement notes'
    : `${notes.length} settlement note(s): ${paid} paid-unfulfilled (refund or re-pin, then close), ${notes.length - paid} to reconcile`]
  for (const n of notes) lines.push(line(n))
  const closed = r.closed as Note[] | undefined
  if (closed != null) {
    lines.push('', closed.length === 0 ? 'no closed notes' : `${closed.length} closed note(s):`)
    for (const c of closed) lines.push(`${line(c)}\n  closed ${String(c.closedAt)}: ${String(c.operatorNote)}`)
  }
  return lines.join('\n')
}

function printCheck (r: SettlementsReply): string {
  const dropped = r.dropped as Note[]
  const confirmed = r.confirmed as Note[]
  const fulfilled = r.fulfilled as Note[]
  const lines = [`checked ${String(r.checked)} note(s): ${dropped.length} dropped (never paid), ${fulfilled.length} paid and now fulfilled, ${confirmed.length} newly confirmed paid-unfulfilled, ${String(r.pending)} still pending; ${String(r.awaitingOperator)} paid-unfulfilled in all${Number(r.inFlight) > 0 ? `; ${String(r.inFlight)} of requests still settling not checked` : ''}`]
  for (const n of dropped) lines.push(`dropped  ${line(n)}`)
  for (const n of fulfilled) lines.push(`pinned   ${line(n)}  as ${String(n.requestid)} for ${String(n.payer)}`)
  for (const n of confirmed) lines.push(`PAID     ${line(n)}  payer ${String(n.payer)}`)
  return lines.join('\n')
}
