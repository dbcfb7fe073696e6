/**
 * The operator's denials (`pind deny add|rm`): the rules in force, and an
 * audit log of every add and rm. Each write changes the rule and appends to
 * the log in one transaction.
 */
export interface DenialRecord {
  /** canonical form: `/ipfs/<multihash b58>[/path][*]` or `//<double hash>`; one rule per key */
  key: string
  /** as the operator gave it, normalized to `/ipfs/<cid>[/path]` */
  rule: string
  reason: string
  /** who ran the command (the operator's login; SUDO_USER when run through sudo) */
  by: string
  /** RFC 3339 UTC */
  at: string
}

export interface DenialEvent {
  op: 'add' | 'rm'
  key: string
  rule: string
  reason?: string
  by: string
  at: string
}

export interface DenialLedger {
  /** Adds a rule, replacing one with the same key: the rule it replaced, or undefined. */
  add(rec: DenialRecord): Promise<DenialRecord | undefined>
  /** Removes a rule (the removed record), or undefined when none has this key. */
  remove(key: string, event: { by: string, at: string, reason?: string }): Promise<DenialRecord | undefined>
  get(key: string): Promise<DenialRecord | undefined>
  all(): Promise<DenialRecord[]>
  /** every add and rm, in order */
  history(): Promise<DenialEvent[]>
  /**
   * Calls `fn` after a committed add or remove, this process's or another's
   * sharing the ledger, and when such changes may have been missed. Returns
   * the unsubscribe.
   */
  watch(fn: () => void): () => void
}
