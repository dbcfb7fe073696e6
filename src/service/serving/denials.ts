/**
 * What is denied, and why: the operator's own denials (the ledger, `pind
 * deny add`) and the denylist files (`--denylist`, IPIP-383), as one answer
 * the serve policy asks for every CID any channel would serve.
 *
 * - The operator's rules come first: a CID or path they name is denied
 *   whatever the files say (a file's `!` exception does not lift them).
 * - Then the files, the last one first: the first file with a rule matching
 *   decides (deny, or allow for a `!` exception), so later files override
 *   earlier ones.
 * - A CID is checked by itself first (what bitswap and every block the
 *   gateway reads are held to): a rule on the CID — `/ipfs/CID` or
 *   `/ipfs/CID/*` — denies every path under it too, since its root block
 *   cannot be read (the spec's BlockService model). Then, for the gateway
 *   only, the path under it: `/ipfs/CID/PATH` denies that path through the
 *   gateway, not the blocks it leads to over bitswap (bitswap asks for blocks
 *   by CID, with no path): deny the CID the path resolves to for that.
 * With no rules at all, a check costs nothing.
 */
import { basename } from 'node:path'
import type { Blockstore } from 'interface-blockstore'
import { base58btc } from 'multiformats/bases/base58'
import type { CID } from 'multiformats/cid'
import { GoneError, InvalidInputError, LegallyRefusedError } from '../../kernel/errors.js'
import { decodeCid } from '../../ipfs/cid-text.js'
import { CompiledList, Probe } from '../../denylist/compiled.js'
import { parseRule, RuleError, trimSlashes, type Rule } from '../../denylist/rule.js'
import type { DenylistFile } from '../../denylist/sources.js'
import type { DenialLedger, DenialRecord } from '../../ledger/denials.js'
import type { Refusal } from './serve-policy.js'

export interface Denial extends Refusal {
  source: 'operator' | 'denylist'
  /** operator: the rule, its reason, who added it and when */
  rule?: string
  reason?: string
  by?: string
  at?: string
  /** denylist: the file and the line of the rule that matched */
  file?: string
  line?: number
}

export interface DenialsOptions {
  ledger?: DenialLedger
  files?: () => readonly DenylistFile[]
}

export class Denials {
  private operator: { list: CompiledList, records: DenialRecord[] } = { list: new CompiledList(), records: [] }

  private unwatch: () => void = () => {}

  private constructor (private readonly o: DenialsOptions) {}

  /** The denials with the operator's rules as the ledger has them now, read again after each change (another front end's too). */
  static async open (o: DenialsOptions): Promise<Denials> {
    const d = new Denials(o)
    d.unwatch = o.ledger?.watch(() => { void d.reload().catch(() => {}) }) ?? (() => {})
    await d.reload()
    return d
  }

  /** stops following the ledger's changes */
  close (): void {
    this.unwatch()
  }

  /** Reads the operator's rules from the ledger again (after `pind deny add|rm`). */
  async reload (): Promise<void> {
    const list = new CompiledList()
    const records: DenialRecord[] = []
    for (const r of await this.o.ledger?.all() ?? []) {
      try {
        list.add(parseRule(r.rule), records.length + 1)
        records.push(r)
      } catch {} // written by `deny add`, which parsed it: cannot happen
    }
    this.operator = { list, records }
  }

  /** The operator's rules in force. */
  operatorRules (): readonly DenialRecord[] {
    return this.operator.records
  }

  /** Why `cid` (or, for the gateway, `path` under it) is denied; undefined when it is not. */
  denied (cid: CID, path = ''): Denial | undefined {
    const files = this.o.files?.() ?? []
    if (this.operator.list.empty && files.length === 0) return undefined
    const probe = new Probe(cid)
    return this.deniedAt(probe, files, '') ?? (path !== '' ? this.deniedAt(probe, files, path) : undefined)
  }

  private deniedAt (probe: Probe, files: readonly DenylistFile[], path: string): Denial | undefined {
    const op = this.operator.list.match(probe, path)
    if (op != null) {
      const r = this.operator.records[op.line - 1] as DenialRecord
      return { message: `denied by the operator of this service${r.reason !== '' ? ` (${r.reason})` : ''}`, source: 'operator', rule: r.rule, reason: r.reason, by: r.by, at: r.at }
    }
    for (let i = files.length - 1; i >= 0; i--) {
      const f = files[i] as DenylistFile
      if (f.list.empty) continue
      const m = f.list.match(probe, path)
      if (m == null) continue
      if (m.allow) return undefined
      return { message: `on the denylist ${basename(f.path)}`, source: 'denylist', file: f.path, line: m.line }
    }
    return undefined
  }
}

/** What `pind deny add|rm|check` take: a CID, `CID/path`, `/ipfs/CID[/path][*]`, `ipfs://CID[/path]` or `//<double hash>`. */
export interface OperatorTarget {
  /** one rule per key: the CID's multihash and the path, or the double hash */
  key: string
  /** normalized: `/ipfs/<cid>[/path][*]` or `//<hash>` */
  rule: string
  parsed: Extract<Rule, { kind: 'ipfs' | 'double-hash' }>
}

export const MAX_TARGET_LENGTH = 4096

export function operatorTarget (text: unknown): OperatorTarget {
  if (typeof text !== 'string' || text.trim() === '') throw new InvalidInputError('give a CID, CID/path, /ipfs/CID[/path] or //<double hash>')
  let t = text.trim()
  if (t.length > MAX_TARGET_LENGTH) throw new InvalidInputError(`a rule is at most ${MAX_TARGET_LENGTH} characters`)
  if (/^[!+-]/.test(t)) throw new InvalidInputError('exceptions (!rules) belong in a .deny file of --denylist (a later file overrides an earlier one); pind deny removes only its own rules')
  if (t.startsWith('ipfs://')) t = `/ipfs/${t.slice('ipfs://'.length)}`
  else if (!t.startsWith('/')) t = `/ipfs/${t}`
  let parsed: Rule
  try {
    parsed = parseRule(t)
  } catch (err) {
    if (err instanceof RuleError) throw new InvalidInputError(err.message)
    throw err
  }
  if (parsed.kind === 'ipns') throw new InvalidInputError('pind serves no IPNS names: deny the CID the name points to')
  if (parsed.kind === 'harmless') throw new InvalidInputError(`${parsed.cid} is ${parsed.what}: every application needs it, so it is never denied`)
  if (parsed.kind === 'double-hash') return { key: t, rule: t, parsed }
  const b58 = base58btc.baseEncode(parsed.multihash)
  const tail = parsed.prefix ? (parsed.path === '' ? '/*' : `/${parsed.path}*`) : (parsed.path === '' ? '' : `/${parsed.path}`)
  const cidText = t.slice('/ipfs/'.length).split('/')[0] as string
  return { key: `/ipfs/${b58}${tail}`, rule: `/ipfs/${cidText}${tail}`, parsed }
}

/** The CID and path a target names, for `pind deny check` (no prefix, no double hash: a thing a client could ask for). */
export function checkTarget (text: unknown): { cid: CID, path: string } {
  if (typeof text !== 'string' || text.trim() === '') throw new InvalidInputError('give a CID, CID/path or /ipfs/CID[/path]')
  let t = text.trim()
  if (t.startsWith('ipfs://')) t = t.slice('ipfs://'.length)
  else if (t.startsWith('/ipfs/')) t = t.slice('/ipfs/'.length)
  const i = t.indexOf('/')
  const cidText = i < 0 ? t : t.slice(0, i)
  let cid: CID
  try {
    cid = decodeCid(cidText)
  } catch {
    throw new InvalidInputError(`not a CID: ${cidText.slice(0, 100)}`)
  }
  let path = i < 0 ? '' : t.slice(i + 1)
  try { path = decodeURIComponent(path) } catch { throw new InvalidInputError('malformed %-encoding in the path') }
  return { cid, path: trimSlashes(path) }
}

/** Content this service does not accept (HTTP: 451, RFC 7725), naming who blocks it. */
export function unavailableForLegalReasons (what: string, refusal: Refusal, publicUrl: string): LegallyRefusedError {
  return new LegallyRefusedError(`${what} is not accepted by this service: ${refusal.message}; nothing was charged`, publicUrl)
}

/** Content the gateway no longer serves (HTTP: 410 Gone). */
export function goneDenied (what: string, refusal: Refusal): GoneError {
  return new GoneError(`${what} is not served by this gateway: ${refusal.message}`)
}

/**
 * The gateway's blockstore, refusing every block a denial names: a denied
 * block reached under a path (a file in a directory, a leaf of a file) ends
 * the response with 410, or cuts it if it has started.
 */
export function refusingDenied<T extends Pick<Blockstore, 'get' | 'has'> & { readonly readAhead?: number }> (bs: T, refusal: (cid: CID) => Refusal | undefined): Pick<Blockstore, 'get' | 'has'> & { readonly readAhead?: number } {
  return {
    // the store's read-ahead hint (S3: a round trip per block) reaches the gateway's reader (ipfs/content.ts)
    get readAhead () { return bs.readAhead },
    has: async (cid, options) => await bs.has(cid, options),
    get: (cid, options) => {
      const r = refusal(cid)
      if (r != null) throw goneDenied(cid.toString(), r)
      return bs.get(cid, options)
    }
  }
}

/**
 * A PinStatus as its owner sees it while its CID is denied: still pinned
 * (the pin and its blocks stay; DELETE it, or ask the operator), but not
 * served, and why — in `info.denied` and at the head of `status_details`.
 */
export function withDenial<S extends { pin: { cid: string }, info: Record<string, string> }> (status: S, refusal: (cid: CID) => Refusal | undefined): S & { info: { denied?: string } } {
  let cid: CID
  try { cid = decodeCid(status.pin.cid) } catch { return status }
  const r = refusal(cid)
  if (r == null) return status
  const details = status.info.status_details
  return { ...status, info: { ...status.info, denied: r.message, status_details: `not served: ${r.message}${details != null ? `; ${details}` : ''}` } }
}
