/**
 * The code at an address (`eth_getCode`), as @x402/evm's exact scheme asks
 * for a payer's: twice in each verification, one read after the other (is
 * the payer a deployed contract? then which signature check?), and again
 * when the settlement verifies once more. Four sequential round trips to the
 * RPC for one answer that changes only when the payer deploys, destroys or
 * delegates (EIP-7702) its own account.
 *
 * Answers are kept TTL_MS per address (at most MAX_KEPT addresses, the oldest
 * forgotten first); a read in flight is shared; a failed read is not kept. A
 * kept answer can only be stale by the payer's own doing within TTL_MS, and
 * the chain decides the transfer in the end: a stale "no code" or "code"
 * makes a verification refuse (the payer pays again later), or lets a
 * settlement go to the chain, which refuses it there (nothing is pinned).
 */

type Code = `0x${string}` | undefined

/** how long an address's code is kept */
export const TTL_MS = 30_000
/** addresses kept at most (each ~100 bytes; an attacker can name as many payers as it signs payments for) */
export const MAX_KEPT = 4096

export class CodeCache {
  private readonly kept = new Map<string, { code: Code, until: number }>()
  private readonly reading = new Map<string, Promise<Code>>()

  constructor (
    private readonly read: (args: { address: `0x${string}` }) => Promise<Code>,
    private readonly o: { ttlMs: number, max: number, now: () => number } = { ttlMs: TTL_MS, max: MAX_KEPT, now: Date.now }
  ) {}

  async getCode (args: { address: `0x${string}` }): Promise<Code> {
    const key = args.address.toLowerCase()
    const kept = this.kept.get(key)
    if (kept != null) {
      if (kept.until > this.o.now()) return kept.code
      this.kept.delete(key)
    }
    let reading = this.reading.get(key)
    if (reading == null) {
      reading = this.read(args).then((code) => {
        this.keep(key, code)
        return code
      }).finally(() => { this.reading.delete(key) })
      this.reading.set(key, reading)
    }
    return await reading
  }

  /** addresses whose code is kept (tests) */
  get size (): number {
    return this.kept.size
  }

  private keep (key: string, code: Code): void {
    if (this.kept.size >= this.o.max) this.kept.delete(this.kept.keys().next().value as string)
    this.kept.set(key, { code, until: this.o.now() + this.o.ttlMs })
  }
}
