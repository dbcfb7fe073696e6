/**
 * What a GET /pins that scans its owner's summaries found (name, meta or
 * cid filters: its count needs every match), kept for the same query until
 * the ledger's next transaction ends or the first pin it counted expires:
 * a listing repeated meanwhile reads only its page's records. Sound while this
 * process is the ledger's only writer (the data dir's lock); a ledger shared by
 * several front ends would drop them on its change feed instead.
 */

/** a listing's count and the requestids of its page */
export interface Listing { count: number, ids: string[] }

interface Kept { ended: number, from: number, until: number, listing: Listing }

/** listings kept at most */
export const MAX_KEPT = 256
/** requestids kept in all (a query's page holds up to 1,000): ~1 MB, whatever queries clients craft */
export const MAX_KEPT_IDS = 16_384

export class Listings {
  /** by query, the least recently used first */
  private readonly kept = new Map<string, Kept>()
  private ids = 0

  /** `ended`: the ledger's count of ended transactions (LedgerEnv.transactionsEnded) */
  constructor (private readonly ended: () => number) {}

  /** the listing kept for this query, if the ledger is as it was and no pin it counted has expired by `now` (ms) */
  get (query: string, now: number): Listing | undefined {
    const k = this.kept.get(query)
    if (k === undefined) return undefined
    this.drop(query)
    // a clock set back may bring pins it found expired back to life
    if (k.ended !== this.ended() || now < k.from || now >= k.until) return undefined
    this.add(query, k)
    return k.listing
  }

  /** keeps a listing read at `now` (ms), with the ledger as it is, until `until` (ms): when the first pin it counted expires */
  keep (query: string, now: number, until: number, listing: Listing): void {
    this.drop(query)
    this.add(query, { ended: this.ended(), from: now, until, listing })
    while (this.kept.size > MAX_KEPT || this.ids > MAX_KEPT_IDS) this.drop(this.kept.keys().next().value as string)
  }

  private add (query: string, k: Kept): void {
    this.kept.set(query, k)
    this.ids += k.listing.ids.length
  }

  private drop (query: string): void {
    const k = this.kept.get(query)
    if (k === undefined) return
    this.kept.delete(query)
    this.ids -= k.listing.ids.length
  }
}
