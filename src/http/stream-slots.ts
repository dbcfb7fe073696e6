/**
 * Gateway GETs under way per client address (--http-max-streams-per-client).
 * The send budget (send-budget.ts) bounds what all responses hold and the
 * minimum send rate cuts clients that take nothing; a client that takes just
 * above that rate over many connections would still fill the budget and make
 * everyone else wait for it. Past this many of its own, a client is answered
 * 429 (with Retry-After) until one of them ends.
 */
export class StreamSlots {
  private readonly open = new Map<string, number>()

  constructor (readonly max: number) {}

  /** takes a slot for `client`; false when it has `max` already (0 = unlimited) */
  take (client: string): boolean {
    const n = this.open.get(client) ?? 0
    if (this.max > 0 && n >= this.max) return false
    this.open.set(client, n + 1)
    return true
  }

  give (client: string): void {
    const n = (this.open.get(client) ?? 1) - 1
    if (n <= 0) this.open.delete(client)
    else this.open.set(client, n)
  }
}
