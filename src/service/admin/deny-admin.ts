/**
 * `pind deny` as operations on the operator's denials: add, rm, ls, check.
 * The same functions run inside a live serve (over the admin socket: the
 * change applies at once, on every channel) and in the CLI on a stopped
 * data dir (it applies from the next start).
 */
import { z } from 'zod/v4'
import { basename } from 'node:path'
import { InvalidInputError, NotFoundError } from '../../kernel/errors.js'
import type { DenylistFile } from '../../denylist/sources.js'
import type { DenialLedger, DenialRecord } from '../../ledger/denials.js'
import type { PinLedger } from '../../ledger/pins.js'
import { checkTarget, operatorTarget, type Denials } from '../serving/denials.js'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { PIN_CODECS } from '../../ipfs/codecs.js'
import type { Reply } from './reply.js'

/** what `pind deny` asks (the admin channel's POST /deny body, validated with this) */
export const DenyOp = z.discriminatedUnion('op', [
  z.object({ op: z.literal('add'), target: z.string(), reason: z.string(), by: z.string() }),
  z.object({ op: z.literal('rm'), target: z.string(), by: z.string(), reason: z.string().optional() }),
  z.object({ op: z.literal('ls'), history: z.boolean().optional() }),
  z.object({ op: z.literal('check'), target: z.string() })
])
export type DenyOp = z.output<typeof DenyOp>

export interface DenyAdminDeps {
  ledger: DenialLedger
  pins: Pick<PinLedger, 'livePinsOf'>
  /** a running serve's denials (reloaded after each change); on a stopped data dir, built for `check` */
  denials?: Denials
  /** the denylist files as loaded */
  files?: () => readonly DenylistFile[]
}

export const MAX_REASON = 1000
const MAX_BY = 200

/** what POST /deny answers (`pind deny`) */
export type DenyReply = Reply<Awaited<ReturnType<typeof run>>>
export const runDenyOp: (op: DenyOp, d: DenyAdminDeps) => Promise<DenyReply> = run

async function run (op: DenyOp, d: DenyAdminDeps) {
  switch (op?.op) {
    case 'add': {
      const t = operatorTarget(op.target)
      const reason = text(op.reason, '--reason', MAX_REASON)
      if (reason === '') throw new InvalidInputError('add needs a reason (why it is denied: kept in the ledger, and shown to clients and to the owners of pins of it)')
      const rec: DenialRecord = { key: t.key, rule: t.rule, reason, by: who(op.by), at: new Date().toISOString() }
      const replaced = await d.ledger.add(rec)
      await d.denials?.reload()
      const pins = t.parsed.kind === 'ipfs' ? await livePinsOf(t.parsed.multihash, d) : []
      return { added: rec, ...(replaced != null ? { replaced } : {}), livePins: pins, gatewayOnly: t.parsed.kind === 'ipfs' && t.parsed.path !== '' }
    }
    case 'rm': {
      const t = operatorTarget(op.target)
      const reason = text(op.reason, '--reason', MAX_REASON)
      const removed = await d.ledger.remove(t.key, { by: who(op.by), at: new Date().toISOString(), ...(reason !== '' ? { reason } : {}) })
      if (removed == null) throw new NotFoundError(`no denial ${t.rule.slice(0, 200)} (see pind deny ls; rules of --denylist files are changed in the files)`)
      await d.denials?.reload()
      return { removed }
    }
    case 'ls':
      return {
        rules: await d.ledger.all(),
        ...(d.files != null ? { denylists: d.files().map(fileView) } : {}),
        ...(op.history === true ? { history: await d.ledger.history() } : {})
      }
    case 'check': {
      const { cid, path } = checkTarget(op.target)
      const denial = d.denials?.denied(cid, path)
      return { target: `/ipfs/${cid}${path !== '' ? `/${path}` : ''}`, denied: denial != null, ...(denial != null ? { denial } : {}) }
    }
    default:
      throw new InvalidInputError('unknown deny operation')
  }
}

/** pins of this multihash under any codec pind pins (a denial names the multihash) */
async function livePinsOf (multihash: Uint8Array, d: DenyAdminDeps): Promise<string[]> {
  const digest = Digest.decode(multihash)
  const ids: string[] = []
  for (const c of PIN_CODECS) ids.push(...await d.pins.livePinsOf(CID.createV1(c.code, digest)))
  return ids
}

function fileView (f: DenylistFile): Record<string, unknown> {
  return {
    file: f.path,
    name: f.header?.name ?? basename(f.path),
    rules: f.list.counts.rules,
    ipns: f.list.counts.ipns,
    skipped: f.problems,
    lines: f.lines,
    loadedAt: f.loadedAt,
    ms: f.ms,
    ...(f.error != null ? { error: f.error } : {})
  }
}

function text (v: unknown, what: string, max: number): string {
  if (v == null) return ''
  if (typeof v !== 'string') throw new InvalidInputError(`${what} must be text`)
  const s = v.trim()
  if (s.length > max) throw new InvalidInputError(`${what} is longer than ${max} characters`)
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(s)) throw new InvalidInputError(`${what} must be one line of printable text`)
  return s
}

function who (by: unknown): string {
  const s = text(by, 'the operator name', MAX_BY)
  return s === '' ? 'unknown' : s
}
