/**
 * GET /usage (and the MCP usage tool): what a wallet has here and has paid —
 * its pins by status, the DAG bytes of the pinned ones, the total paid per
 * network, and the soonest expiry. Free; read from the owner's own ranges
 * of the ledger (PinLedger.usage), never the whole ledger.
 */
import { z } from 'zod/v4'
import type { PinLedger } from '../../ledger/pins.js'
import { formatUsdc } from '../../payment/pricing.js'

const Count = z.number().int().nonnegative()

export const Usage = z.object({
  owner: z.string().meta({ description: 'The wallet (lowercase 0x address) the token names.' }),
  pins: z.object({ queued: Count, pinning: Count, pinned: Count, failed: Count, total: Count })
    .meta({ description: 'Pins not removed, by status: live ones, and failed ones until they would have expired (as GET /pins counts them).' }),
  bytes_pinned: Count.meta({ description: 'DAG bytes of the pinned ones (a pin still fetching counts once pinned).' }),
  spent: z.record(z.string(), z.object({
    amount: z.string().meta({ description: 'Atomic units of the asset (USDC: 10^-6).' }),
    usdc: z.string().meta({ description: 'The same in USDC.' })
  })).meta({ description: 'What this wallet paid, per network (CAIP-2 id): pins, uploads, renewals and tickets. Payments of pins removed long ago and archived are not counted.' }),
  next_expiry: z.string().nullable().meta({ description: 'The soonest pinned_until of a live pin (RFC 3339, UTC), or null when none is live.' })
}).meta({ description: 'A wallet\'s pins and payments here.' })

export type UsageBody = z.infer<typeof Usage>

export async function usageOf (ledger: Pick<PinLedger, 'usage'>, owner: string, now = new Date()): Promise<UsageBody> {
  const u = await ledger.usage(owner, now)
  const total = u.pins.queued + u.pins.pinning + u.pins.pinned + u.pins.failed
  const spent: UsageBody['spent'] = {}
  for (const network of Object.keys(u.spent).sort()) {
    const amount = u.spent[network] as bigint
    spent[network] = { amount: amount.toString(), usdc: formatUsdc(amount) }
  }
  return {
    owner,
    pins: { ...u.pins, total },
    bytes_pinned: u.bytes,
    spent,
    next_expiry: u.nextExpiry != null ? new Date(u.nextExpiry).toISOString() : null
  }
}
