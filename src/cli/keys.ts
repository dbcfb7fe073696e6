/**
 * `pind keys …`: token signing keys, operator-issued tokens and revocation.
 * Runs through a live serve's admin socket, or on a stopped data dir.
 */
import type { Command } from 'commander'
import { AdminCallError, callAdmin } from '../admin/client.js'
import { PIN_WITHOUT_PAYMENT } from '../auth/permissions.js'
import { duration } from '../config/parse.js'
import { HttpError } from '../errors.js'
import { runKeysOp, type KeysOp } from '../service/keys-admin.js'
import { CliError, runAdmin, type Via } from './admin-target.js'
import { configFromCli } from './config-from-cli.js'

export function keysCommand (program: Command): void {
  const keys = program.command('keys')
    .description('manage token signing keys, operator-issued tokens and revocations')
    .addHelpText('after', `
Works on a running serve (through its admin socket) or on a stopped data dir.

Examples:
  pind keys list
  pind keys rotate
  pind keys retire <kid>
  pind keys mint --owner 0xAbC… --unpaid-pins --ttl 365d --note "kubo on backup host"
  pind keys revoke <token>            (or --jti <id>, or --owner 0x… for all of an owner's tokens)
  pind keys jwks > jwks.json
`)

  const run = (name: string, cmd: Command, op: KeysOp, print: (r: Record<string, unknown>) => string): Promise<void> =>
    runKeys(name, cmd, op, print)

  keys.command('list').description('signing keys (id, algorithm, created, active/retired) and operator tokens')
    .option('--json', 'print JSON')
    .action(async (_o, cmd: Command) => {
      await run('list', cmd, { op: 'list' }, (r) => {
        const lines = ['KID                                          ALG     STATUS   CREATED']
        for (const k of r.keys as Array<{ kid: string, alg: string, status: string, created: string, retiredAt?: string }>) lines.push(`${k.kid.padEnd(44)} ${k.alg.padEnd(7)} ${k.status.padEnd(8)} ${k.created}${k.retiredAt != null ? `  retired ${k.retiredAt}` : ""}`)
        const toks = r.operatorTokens as Array<Record<string, unknown>>
        lines.push('', toks.length === 0 ? 'no operator tokens' : 'OPERATOR TOKENS (jti, owner, permissions, expires, revoked)')
        for (const t of toks) lines.push(`${String(t.jti)}  ${String(t.owner)}  ${(t.permissions as string[]).join(',')}  ${String(t.expiresAt)}${t.revoked != null ? `  REVOKED ${String(t.revoked)}` : ''}${t.note != null ? `  # ${String(t.note)}` : ''}`)
        return lines.join('\n')
      })
    })

  keys.command('rotate').description('make a new signing key active; tokens signed by older keys keep working until those keys are retired')
    .option('--json', 'print JSON')
    .action(async (_o, cmd: Command) => {
      await run('rotate', cmd, { op: 'rotate' }, r => `new active key ${String((r.rotated as Record<string, string>).kid)}`)
    })

  keys.command('retire <kid>').description('retire a key: every token it signed stops working')
    .option('--json', 'print JSON')
    .action(async (kid: string, _o, cmd: Command) => {
      await run('retire', cmd, { op: 'retire', kid }, r => `retired ${String((r.retired as Record<string, string>).kid)}`)
    })

  keys.command('jwks').description('the public signing keys as a JWKS document (also served at /.well-known/jwks.json)')
    .action(async (_o, cmd: Command) => {
      await run('jwks', cmd, { op: 'jwks' }, r => JSON.stringify(r, null, 2))
    })

  keys.command('mint').description('mint an operator-issued token for an owner address')
    .requiredOption('--owner <address>', 'the 0x address the token acts for')
    .option('--unpaid-pins', `allow POST /pins without x402 payment (permission ${PIN_WITHOUT_PAYMENT})`)
    .option('--ttl <duration>', 'lifetime, e.g. 30d, 365d (default: the service token lifetime)')
    .option('--note <text>', 'a note kept with the token in the ledger')
    .option('--json', 'print JSON')
    .action(async (o: { owner: string, unpaidPins?: boolean, ttl?: string, note?: string }, cmd: Command) => {
      let ttlSeconds: number | undefined
      if (o.ttl != null) {
        try { ttlSeconds = duration(60, 10 * 365 * 86400)(o.ttl) } catch (err) { usage(`--ttl: ${(err as Error).message}`) }
      }
      const op: KeysOp = { op: 'mint', owner: o.owner, permissions: o.unpaidPins === true ? [PIN_WITHOUT_PAYMENT] : [], ...(ttlSeconds != null ? { ttlSeconds } : {}), ...(o.note != null ? { note: o.note } : {}) }
      await run('mint', cmd, op, r => `${String(r.token)}\n# jti ${String(r.jti)}, owner ${String(r.owner)}, permissions ${(r.permissions as string[]).join(',') || 'none'}, expires ${String(r.expiresAt)}`)
    })

  keys.command('revoke [token]').description('revoke one token (the token itself or --jti), or every token of --owner issued until now')
    .option('--jti <id>', 'the token id (jti claim)')
    .option('--owner <address>', 'revoke all tokens of this owner issued until now')
    .option('--json', 'print JSON')
    .action(async (token: string | undefined, o: { jti?: string, owner?: string }, cmd: Command) => {
      if ([token, o.jti, o.owner].filter(x => x != null).length !== 1) usage('give exactly one of: a token, --jti <id>, --owner <address>')
      const op: KeysOp = { op: 'revoke', ...(token != null ? { token } : {}), ...(o.jti != null ? { jti: o.jti } : {}), ...(o.owner != null ? { owner: o.owner } : {}) }
      await run('revoke', cmd, op, r => r.revokedOwner != null ? `revoked every token of ${String(r.revokedOwner)} issued until ${String(r.before)}` : `revoked token ${String(r.revokedJti)}`)
    })
}

async function runKeys (name: string, cmd: Command, op: KeysOp, print: (r: Record<string, unknown>) => string): Promise<void> {
  const config = configFromCli(cmd, 'admin')
  const json = cmd.opts<{ json?: boolean }>().json === true
  let out: { result: Record<string, unknown>, how: Via }
  try {
    out = await runAdmin(config.dataDir, `keys ${name}`, {
      viaServe: async (socket) => await callAdmin(socket, '/keys', op),
      locally: async (r) => await runKeysOp(op, { keystore: r.keystore, tokenLedger: r.tokenLedger, ...(r.tokens != null ? { tokens: r.tokens } : {}) })
    })
  } catch (err) {
    fail(err)
    return
  }
  const where = out.how.via === 'serve' ? `via the running pind serve (pid ${out.how.pid})` : `on the data dir ${config.dataDir} (no serve running)`
  if (json) process.stdout.write(JSON.stringify({ ...out.result, via: out.how.via }) + '\n')
  else process.stdout.write(print(out.result) + '\n')
  process.stderr.write(`pind keys ${name}: done ${where}\n`)
}

function usage (message: string): never {
  process.stderr.write(`pind keys: ${message}\n`)
  process.exit(2)
}

function fail (err: unknown): void {
  const e = err as Error
  const message = err instanceof HttpError ? err.details : err instanceof AdminCallError || err instanceof CliError ? e.message : `${e.name}: ${e.message}`
  process.stderr.write(`pind keys: ${message}\n`)
  process.exitCode = err instanceof HttpError && err.status === 400 ? 2 : err instanceof AdminCallError && err.status === 400 ? 2 : 1
}
