/**
 * `pind keys …`: token signing keys, operator-issued tokens and revocation.
 * Runs through a live serve's admin socket, or on a stopped data dir.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import type { Command } from 'commander'
import { callAdmin } from '../admin/client.js'
import { PIN_WITHOUT_PAYMENT } from '../auth/permissions.js'
import { duration } from '../config/parse.js'
import { layout } from '../datadir/layout.js'
import { acquireLock, lockHolder } from '../datadir/lock.js'
import type { KeysOp, KeysReply } from '../service/admin/keys-admin.js'
import { runAdmin, type Via, describeVia, writeResult } from './admin-target.js'
import { configFromCli } from './config-from-cli.js'
import { CliError, fail, usage } from './fail.js'

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
  pind keys peer-id
  pind keys export-identity /secure/pind-identity.json     (move a node: same peer ID elsewhere)
  pind keys import-identity /secure/pind-identity.json     (on the new machine, serve stopped)
`)

  const run = (name: string, cmd: Command, op: KeysOp, print: (r: KeysReply) => string, note?: (r: KeysReply) => string | undefined): Promise<void> =>
    runKeys(name, cmd, op, print, note)

  keys.command('list').description('signing keys (id, algorithm, created, active/retired) and operator tokens')
    .option('--json', 'print JSON')
    .action(async (_o, cmd: Command) => {
      await run('list', cmd, { op: 'list' }, (r) => {
        const lines = ['  KID                                          ALG     STATUS   CREATED']
        for (const k of r.keys as Array<{ kid: string, alg: string, status: string, created: string, retiredAt?: string, signing?: boolean }>) lines.push(`${k.signing === true ? '*' : ' '} ${k.kid.padEnd(44)} ${k.alg.padEnd(7)} ${k.status.padEnd(8)} ${k.created}${k.retiredAt != null ? `  retired ${k.retiredAt}` : ''}`)
        lines.push('(* signs new tokens; the other active keys only verify the tokens they signed)')
        const toks = r.operatorTokens ?? []
        lines.push('', toks.length === 0 ? 'no operator tokens' : 'OPERATOR TOKENS (jti, owner, permissions, expires, revoked)')
        for (const t of toks) lines.push(`${t.jti}  ${t.owner}  ${t.permissions.join(',')}  ${t.expiresAt}${t.revoked != null ? `  REVOKED ${t.revoked}` : ''}${t.note != null ? `  # ${t.note}` : ''}`)
        return lines.join('\n')
      })
    })

  keys.command('rotate').description('make a new signing key active; tokens signed by older keys keep working until those keys are retired')
    .option('--json', 'print JSON')
    .action(async (_o, cmd: Command) => {
      await run('rotate', cmd, { op: 'rotate' }, r => `new active key ${String(r.rotated?.kid)}`)
    })

  keys.command('retire <kid>').description('retire a key: every token it signed stops working')
    .option('--json', 'print JSON')
    .action(async (kid: string, _o, cmd: Command) => {
      await run('retire', cmd, { op: 'retire', kid }, r => `retired ${String(r.retired?.kid)}`)
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
        try { ttlSeconds = duration(60, 10 * 365 * 86400)(o.ttl) } catch (err) { usage('keys', `--ttl: ${(err as Error).message}`) }
      }
      const op: KeysOp = { op: 'mint', owner: o.owner, permissions: o.unpaidPins === true ? [PIN_WITHOUT_PAYMENT] : [], ...(ttlSeconds != null ? { ttlSeconds } : {}), ...(o.note != null ? { note: o.note } : {}) }
      // stdout carries the token alone, so that T=$(pind keys mint …) works; the facts go to stderr
      await run('mint', cmd, op, r => String(r.token), r => `minted jti ${String(r.jti)} for ${String(r.owner)}, permissions ${(r.permissions as string[]).join(',') || 'none'}, expires ${String(r.expiresAt)}`)
    })

  keys.command('revoke [token]').description('revoke one token (the token itself or --jti), or every token of --owner issued until now')
    .option('--jti <id>', 'the token id (jti claim)')
    .option('--owner <address>', 'revoke all tokens of this owner issued until now')
    .option('--json', 'print JSON')
    .action(async (token: string | undefined, o: { jti?: string, owner?: string }, cmd: Command) => {
      if ([token, o.jti, o.owner].filter(x => x != null).length !== 1) usage('keys', 'give exactly one of: a token, --jti <id>, --owner <address>')
      const op: KeysOp = { op: 'revoke', ...(token != null ? { token } : {}), ...(o.jti != null ? { jti: o.jti } : {}), ...(o.owner != null ? { owner: o.owner } : {}) }
      await run('revoke', cmd, op, r => r.revokedOwner != null ? `revoked every token of ${String(r.revokedOwner)} issued until ${String(r.before)}` : `revoked token ${String(r.revokedJti)}`,
        r => typeof r.warning === 'string' ? `warning: ${r.warning}` : undefined)
    })

  keys.command('peer-id').description("this node's libp2p peer ID")
    .option('--json', 'print JSON')
    .action(async (_o, cmd: Command) => {
      const config = configFromCli(cmd, 'admin')
      const file = layout(config.dataDir).identity
      if (!existsSync(file)) { fail('keys', new CliError(`${file} does not exist: this data dir has no identity yet (pind serve creates one)`)); return }
      const { peerIdOf, readIdentity } = await identity()
      const peerId = peerIdOf(readIdentity(file))
      process.stdout.write(cmd.opts<{ json?: boolean }>().json === true ? JSON.stringify({ peerId }) + '\n' : `${peerId}\n`)
    })

  keys.command('export-identity <file>').description('write the libp2p identity (private key) to a file (mode 0600), to move the node to another machine')
    .option('--force', 'overwrite the file if it exists')
    .action(async (file: string, o: { force?: boolean }, cmd: Command) => {
      const config = configFromCli(cmd, 'admin')
      const src = layout(config.dataDir).identity
      if (!existsSync(src)) { fail('keys', new CliError(`${src} does not exist: this data dir has no identity yet`)); return }
      if (existsSync(file) && o.force !== true) { fail('keys', new CliError(`${file} exists; use --force to overwrite`)); return }
      const { peerIdOf, privateKeyToProtobuf, readIdentity } = await identity()
      const key = readIdentity(src)
      const doc = { type: IDENTITY_EXPORT_TYPE, version: 1, peerId: peerIdOf(key), privateKey: Buffer.from(privateKeyToProtobuf(key)).toString('base64') }
      writeFileSync(file, JSON.stringify(doc, null, 2) + '\n', { mode: 0o600, flush: true })
      chmodSync(file, 0o600)
      process.stderr.write(`pind keys export-identity: wrote peer ${doc.peerId} to ${file} (mode 0600; it is a private key)\n`)
    })

  keys.command('import-identity <file>').description('replace this data dir\'s libp2p identity with an exported one (serve must be stopped)')
    .option('--force', 'replace an existing identity')
    .action(async (file: string, o: { force?: boolean }, cmd: Command) => {
      const config = configFromCli(cmd, 'admin')
      const paths = layout(config.dataDir)
      try {
        let doc: { type?: unknown, version?: unknown, privateKey?: unknown }
        try { doc = JSON.parse(readFileSync(file, 'utf8')) } catch (err) { throw new CliError(`cannot read ${file}: ${(err as Error).message}`) }
        if (doc.type !== IDENTITY_EXPORT_TYPE || doc.version !== 1 || typeof doc.privateKey !== 'string') throw new CliError(`${file} is not a pind identity export (version 1)`)
        const { peerIdOf, privateKeyFromProtobuf, readIdentity, writeIdentity } = await identity()
        const key = privateKeyFromProtobuf(Buffer.from(doc.privateKey, 'base64'))
        mkdirSync(paths.root, { recursive: true, mode: 0o700 })
        const holder = lockHolder(paths.lock)
        if (holder != null) throw new CliError(`${holder.holder} (pid ${holder.pid}) is using ${paths.root}; stop it first — a running node cannot change its peer ID`)
        const lock = acquireLock(paths.lock, paths.root, 'pind keys import-identity')
        try {
          if (existsSync(paths.identity) && o.force !== true) throw new CliError(`${paths.identity} exists (peer ${peerIdOf(readIdentity(paths.identity))}); use --force to replace it`)
          writeIdentity(paths.identity, key)
        } finally {
          lock.release()
        }
        process.stdout.write(`${peerIdOf(key)}\n`)
        process.stderr.write(`pind keys import-identity: this data dir now has peer ID ${peerIdOf(key)}\n`)
      } catch (err) {
        fail('keys', err)
      }
    })
}

const IDENTITY_EXPORT_TYPE = 'pind-libp2p-identity'

/**
 * libp2p's keys, loaded by the identity commands only: every command's start
 * evaluates this module (cli/program.ts), and loading them is costly.
 */
async function identity (): Promise<typeof import('../ipfs/identity.js') & typeof import('@libp2p/crypto/keys')> {
  const [id, keys] = await Promise.all([import('../ipfs/identity.js'), import('@libp2p/crypto/keys')])
  return { ...id, ...keys }
}

/** `note`: a line for stderr (what stdout must not carry, or a warning) */
async function runKeys (name: string, cmd: Command, op: KeysOp, print: (r: KeysReply) => string, note?: (r: KeysReply) => string | undefined): Promise<void> {
  const config = configFromCli(cmd, 'admin')
  const json = cmd.opts<{ json?: boolean }>().json === true
  let out: { result: KeysReply, how: Via }
  try {
    out = await runAdmin(config, `keys ${name}`, {
      viaServe: async (socket) => await callAdmin(socket, '/keys', op),
      locally: async ({ core }) => {
        // (loaded here: through a running serve, the command needs none of it)
        const { runKeysOp } = await import('../service/admin/keys-admin.js')
        const tokens = await core.recordedTokens()
        return await runKeysOp(op, { keystore: await core.keystore(), tokenLedger: core.ledger.tokens, ...(tokens != null ? { tokens } : {}) })
      }
    })
  } catch (err) {
    fail('keys', err)
    return
  }
  const where = describeVia(out.how, config.dataDir)
  writeResult(out, json, print)
  const extra = note?.(out.result)
  if (extra != null) process.stderr.write(`pind keys ${name}: ${extra}\n`)
  process.stderr.write(`pind keys ${name}: done ${where}\n`)
}

