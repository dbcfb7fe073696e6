/**
 * `pind keys` as operations on the key store and the token ledger. The same
 * functions run inside a live `serve` (reached over the admin socket) and
 * in the CLI on a stopped data dir, so both paths behave alike.
 */
import { z } from 'zod/v4'
import { KeyStoreError, UnknownKeyError } from '../../auth/errors.js'
import { KNOWN_PERMISSIONS } from '../../auth/permissions.js'
import type { KeyStore } from '../../auth/keystore.js'
import { tokenIdOf, type TokenService } from '../../auth/tokens.js'
import { InvalidInputError } from '../../kernel/errors.js'
import type { TokenLedger } from '../../ledger/tokens.js'
import type { Reply } from './reply.js'

/** what `pind keys` asks (the admin channel's POST /keys body, validated with this) */
export const KeysOp = z.discriminatedUnion('op', [
  z.object({ op: z.literal('list') }),
  z.object({ op: z.literal('rotate') }),
  z.object({ op: z.literal('retire'), kid: z.string() }),
  z.object({ op: z.literal('jwks') }),
  z.object({ op: z.literal('mint'), owner: z.string(), permissions: z.array(z.string()), ttlSeconds: z.number().optional(), note: z.string().optional() }),
  z.object({ op: z.literal('revoke'), token: z.string().optional(), jti: z.string().optional(), owner: z.string().optional() })
])
export type KeysOp = z.output<typeof KeysOp>

export interface KeysAdminDeps {
  keystore: Pick<KeyStore, 'active' | 'jwks' | 'list' | 'refresh' | 'retire' | 'rotate'>
  /** undefined when no serve has ever recorded its token issuer in this data dir */
  tokens?: Pick<TokenService, 'issue'>
  tokenLedger: Pick<TokenLedger, 'listIssued' | 'recordIssued' | 'revokeOwner' | 'revokeToken' | 'wasIssued'>
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/
/** the shape of a jti this service issues (16 random bytes, base64url) */
const TOKEN_ID = /^[A-Za-z0-9_-]{22}$/

/** what POST /keys answers (`pind keys`) */
export type KeysReply = Reply<Awaited<ReturnType<typeof run>>>
export const runKeysOp: (op: KeysOp, d: KeysAdminDeps) => Promise<KeysReply> = run

async function run (op: KeysOp, d: KeysAdminDeps) {
  switch (op.op) {
    case 'list': {
      await d.keystore.refresh()
      // the key that signs new tokens is the newest active one; older active keys only verify
      const signing = d.keystore.active().kid
      return { keys: d.keystore.list().map(k => ({ ...k, signing: k.kid === signing })), operatorTokens: await d.tokenLedger.listIssued() }
    }
    case 'rotate':
      return { rotated: await d.keystore.rotate() }
    case 'retire':
      if (typeof op.kid !== 'string' || op.kid === '') throw new InvalidInputError('retire needs a key id')
      try {
        return { retired: await d.keystore.retire(op.kid) }
      } catch (err) {
        if (err instanceof UnknownKeyError || err instanceof KeyStoreError) throw new InvalidInputError(err.message)
        throw err
      }
    case 'jwks':
      await d.keystore.refresh()
      return d.keystore.jwks()
    case 'mint': {
      if (typeof op.owner !== 'string' || !ADDRESS.test(op.owner)) throw new InvalidInputError('mint needs an owner (a 0x address)')
      const unknown = op.permissions.filter(p => !(KNOWN_PERMISSIONS as readonly string[]).includes(p))
      if (unknown.length > 0) throw new InvalidInputError(`unknown permission ${unknown.join(', ')}; known: ${KNOWN_PERMISSIONS.join(', ')}`)
      if (d.tokens == null) throw new InvalidInputError('this data dir has never been served, so the token issuer is unknown: run `pind serve` once (or mint through a running serve)')
      const issued = await d.tokens.issue(op.owner, { permissions: op.permissions, ...(op.ttlSeconds != null ? { ttlSeconds: op.ttlSeconds } : {}) })
      const kid = d.keystore.active().kid
      await d.tokenLedger.recordIssued({
        jti: issued.jti,
        owner: op.owner.toLowerCase(),
        permissions: op.permissions,
        issuedAt: new Date().toISOString(),
        expiresAt: issued.expiresAt.toISOString(),
        kid,
        ...(op.note != null ? { note: op.note } : {})
      })
      return { token: issued.token, jti: issued.jti, owner: op.owner.toLowerCase(), permissions: op.permissions, expiresAt: issued.expiresAt.toISOString(), kid }
    }
    case 'revoke': {
      if (op.owner != null) {
        if (!ADDRESS.test(op.owner)) throw new InvalidInputError('the owner must be a 0x address')
        await d.tokenLedger.revokeOwner(op.owner)
        return { revokedOwner: op.owner.toLowerCase(), before: new Date().toISOString() }
      }
      let jti = op.jti
      if (op.token != null) {
        jti = tokenIdOf(op.token)
        if (jti == null) throw new InvalidInputError('that is not a token with an id; give a token, a token id (jti) or an owner address')
      }
      if (typeof jti !== 'string' || jti === '') throw new InvalidInputError('revoke needs a token, a token id (jti) or an owner address')
      if (jti.length > 256) throw new InvalidInputError('that is not a token id (too long)')
      await d.tokenLedger.revokeToken(jti)
      // operator tokens are recorded when minted, wallet tokens are not: an id that is neither
      // recorded nor shaped like one of ours is most likely mistyped (revoking it does nothing)
      const known = await d.tokenLedger.wasIssued(jti)
      const warning = known
        ? undefined
        : TOKEN_ID.test(jti)
          ? `no operator token ${jti} was minted here; if it is a wallet token's id, that token is revoked, otherwise nothing is`
          : `${jti} does not look like a pind token id (22 base64url characters); nothing that exists was revoked unless a token has that id`
      return { revokedJti: jti, known, ...(warning != null ? { warning } : {}) }
    }
    default:
      throw new InvalidInputError(`unknown keys operation ${String((op as { op: unknown }).op)}`)
  }
}
