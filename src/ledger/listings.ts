/**
 * What a GET /pins that scans its owner's summaries found (name, meta or
 * cid filters: its count needs every match), kept for the same query until
 * the ledger's next transaction ends or the first pin it counted expires:
 * a listing repeated meanwhile reads only its page's records.
 */

/** a listing's count and the requestids of its page */
export interface Listing { count: number, ids: string[] }

interface Kept { ended: number, from: number, until: number, listing: Listing }

/** listings kept at most: each holds up to `limit` (at most 1,000) requestids */
export const MAX_KEPT = 256

export class Listings {
  /** by query, the least recently used first */
  private readonly kept = new Map<string, Kept>()

  /** `ended`: the ledger's count of ended transactions (LedgerEnv.transactionsEnded) */
  constructor (private readonly ended: () => number) {}

  /** the listing kept for this query, if the ledger is as it was and no pin it counted has expired by `now` (ms) */
  get (query: string, now: number): Listing | undefined {
    const k = this.kept.get(query)
    if (k === undefined) return undefined
    this.kept.delete(query)
    // a clock set back may bring pins it found expired back to life
    if (k.ended !== this.ended() || now < k.from || now >= k.until) return undefined
    this.kept.set(query, k)
    return k.listing
  }

  /** keeps a listing read at `now` (ms), with the ledger as it is, until `until` (ms): when the first pin it counted expires */
  keep (query: string, now: number, until: number, listing: Listing): void {
    this.kept.delete(query)
    this.kept.set(query, { ended: this.ended(), from: now, until, listing })
    if (this.kept.size > MAX_KEPT) this.kept.delete(this.kept.keys().next().value as string)
  }
}
