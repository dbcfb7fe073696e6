/**
 * The operator's denials (`pind deny add|rm`) in the ledger, each write one
 * transaction that changes the rule and appends to its audit log:
 *   denials      key → DenialRecord   (the rules in force; key: the rule's canonical form)
 *   denials-log  seq → DenialEvent    (every add and rm, in order: who, when, why)
 * They survive restarts; a running serve reads them at start and after each
 * change it makes through its admin socket.
 */
import type { Database } from 'lmdb'
import type { LedgerEnv } from './open.js'
import type { DenialEvent, DenialRecord } from '../denials.js'
export type { DenialEvent, DenialRecord } from '../denials.js'

export class DenialLedger {
  private readonly rules: Database<DenialRecord, string>
  private readonly log: Database<DenialEvent, number>

  constructor (private readonly env: LedgerEnv) {
    this.rules = env.db<DenialRecord>('denials')
    this.log = env.db<DenialEvent>('denials-log')
  }

  /** Adds a rule, or replaces the one with the same key (a new reason); returns the rule it replaced. */
  async add (rec: DenialRecord): Promise<DenialRecord | undefined> {
    return await this.env.transaction(() => {
      const before = this.rules.get(rec.key)
      this.rules.put(rec.key, rec)
      this.append({ op: 'add', key: rec.key, rule: rec.rule, reason: rec.reason, by: rec.by, at: rec.at })
      return before
    })
  }

  /** Removes a rule; undefined (and nothing written) when there is none with that key. */
  async remove (key: string, event: { by: string, at: string, reason?: string }): Promise<DenialRecord | undefined> {
    return await this.env.transaction(() => {
      const before = this.rules.get(key)
      if (before == null) return undefined
      this.rules.remove(key)
      this.append({ op: 'rm', key, rule: before.rule, by: event.by, at: event.at, ...(event.reason != null ? { reason: event.reason } : {}) })
      return before
    })
  }

  get (key: string): DenialRecord | undefined {
    return this.rules.get(key)
  }

  /** Every rule in force, by key. */
  * all (): Generator<DenialRecord> {
    for (const { value } of this.rules.getRange()) yield value
  }

  /** The audit log, oldest first. */
  * history (): Generator<DenialEvent> {
    for (const { value } of this.log.getRange()) yield value
  }

  /** inside the write transaction */
  private append (e: DenialEvent): void {
    let last = 0
    for (const { key } of this.log.getRange({ reverse: true, limit: 1 })) last = key
    this.log.put(last + 1, e)
  }
}
