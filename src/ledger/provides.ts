/**
 * The provide schedule: which CIDs this node announces on the DHT, and when
 * each is due again. It is written in the same transactions that make pins
 * hold or release blocks, so it survives restarts and stops the moment a pin
 * stops holding a CID. Keys are ordered by their place in the Kademlia
 * keyspace (kad = sha256(multihash)), so a range of keys is a region.
 * Identity CIDs are never announced.
 */
export type ProvideKind = 'roots' | 'blocks'

export interface ProvideRecord {
  /** the multihash (what ADD_PROVIDER carries) */
  mh: Uint8Array
  /** pins holding it */
  n: number
  /** ms since the epoch when it is due to be (re)announced (a new CID: when it was added, i.e. at once) */
  due: number
  /** ms of the last successful announcement; 0 = never */
  at: number
}

export interface ProvideKey {
  kad: Buffer
  mh: Uint8Array
  due: number
  at: number
}

/** A keyspace range: kad keys from `start` (inclusive) to `end` (exclusive; none = to the end). */
export interface KeyRange {
  start: Buffer
  end?: Buffer
}

export interface ProvideSchedule {
  /** Calls `fn` when new CIDs are scheduled (due at once), until the returned function is called. */
  onNewKeys(fn: () => void): () => void
  /** up to `limit` keys due by `until`, in due order, after `after` */
  due(kind: ProvideKind, until: number, limit: number, after?: { due: number, kad: Buffer }): Promise<ProvideKey[]>
  /** the keys in a keyspace region */
  inRange(kind: ProvideKind, range: KeyRange): Promise<ProvideKey[]>
  /**
   * Sets when keys are due next (and when they were last announced, and by
   * which front end: its peer id, which the DHT's records of them name).
   */
  reschedule(kind: ProvideKind, updates: Array<{ kad: Buffer, due: number, at?: number, by?: string }>): Promise<void>
  /**
   * Takes keys to announce, so that front ends sharing the schedule announce
   * each once: every key whose due time is still the one given, and that no
   * one holds (or whose holder's `until` has passed: it died), is held until
   * `until` (ms) or until it is rescheduled. Returns the kads of the keys taken.
   */
  claim(kind: ProvideKind, keys: ReadonlyArray<{ kad: Buffer, due: number }>, until: number): Promise<Buffer[]>
  /**
   * Makes due now every key (of either kind) that front end `by` announced
   * last, whose DHT records name only it: it stopped for good. Returns how
   * many. A schedule one serve owns records no announcer (0).
   */
  reannounce(by: string): Promise<number>
  count(kind: ProvideKind): Promise<number>
  countDue(kind: ProvideKind, until: number): Promise<number>
  firstDue(kind: ProvideKind): Promise<number | undefined>
  /** when the current reprovide cycle started (recorded at its first call) */
  cycleStart(now: number): Promise<number>
}
