/**
 * `pind status`: what an operator looks at first — pins by status, bytes
 * stored and disk free, revenue by month, settlement notes, and, from a
 * running serve, its uptime, peers and whether payments work. The same
 * function runs inside serve (over the admin socket) and on a stopped data
 * dir (without the live part).
 */
import { statfs } from 'node:fs/promises'
import type { Usage } from '../../ipfs/blockstore-usage.js'
import type { Ledger } from '../../ledger/ledger.js'
import type { PaymentsStatus } from '../../payment/gate.js'
import { formatUsdc } from '../../payment/pricing.js'
import { STATUS_CLASSES, pinStatusClass } from './ledger-export.js'

/** What /ready and `pind status` say when there is no payment gate. */
export type PaymentsCheck = PaymentsStatus | { state: 'no-pay-to' | 'no-facilitator', ok: false, message: string }

export interface StatusDeps {
  /** pins and payments are read from one snapshot of it; the settlement notes as they are */
  ledger: Pick<Ledger, 'snapshot' | 'notes' | 'frontEnds' | 'leases'>
  dataDir: string
  usage: () => Promise<Usage>
  /** a running serve */
  live?: {
    pid: number
    startedAt: number
    version: string
    url: string
    peerId: string
    multiaddrs: string[]
    peers: () => Array<{ peer: string, addr: string }>
    payments: () => PaymentsCheck
  }
}

/** what POST /status answers (`pind status`) */
export type StatusReport = Awaited<ReturnType<typeof operatorStatus>>

export async function operatorStatus (d: StatusDeps, now: Date = new Date()) {
  const pins: Record<string, number> = Object.fromEntries(STATUS_CLASSES.map(c => [c, 0]))
  let takenDown = 0
  const months = new Map<string, { payments: number, amount: bigint }>()
  /** by the network paid on: each in its own asset's atomic units */
  const networks = new Map<string, { payments: number, amount: bigint }>()
  const at = await d.ledger.snapshot()
  try {
    for await (const pin of at.pins()) {
      const c = pinStatusClass(pin, now.getTime())
      pins[c] = (pins[c] ?? 0) + 1
      if (pin.takedown != null && pin.removed == null) takenDown++
    }
    for await (const p of at.payments()) {
      const month = p.at.slice(0, 7)
      const m = months.get(month) ?? { payments: 0, amount: 0n }
      m.payments++
      m.amount += BigInt(p.amount)
      months.set(month, m)
      const n = networks.get(p.network) ?? { payments: 0, amount: 0n }
      n.payments++
      n.amount += BigInt(p.amount)
      networks.set(p.network, n)
    }
  } finally {
    await at.release()
  }
  const revenue = [...months].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([month, m]) => ({ month, payments: m.payments, amount: m.amount.toString(), usdc: formatUsdc(m.amount) }))
  const total = [...months.values()].reduce((s, m) => s + m.amount, 0n)
  const notes: Record<string, number> = { unchecked: 0, 'unused-pending': 0, 'paid-unfulfilled': 0 }
  let unfulfilled = 0n
  for (const n of await d.ledger.notes.all()) {
    const state = n.state ?? 'unchecked'
    notes[state] = (notes[state] ?? 0) + 1
    if (state === 'paid-unfulfilled') unfulfilled += BigInt(n.amount)
  }
  const [used, fs, frontEnds, leases] = await Promise.all([d.usage(), statfs(d.dataDir).catch(() => undefined), d.ledger.frontEnds.list(), d.ledger.leases.held()])
  const report: Record<string, unknown> = {
    dataDir: d.dataDir,
    pins: { ...pins, takenDown },
    storage: {
      blocks: used.blocks,
      bytes: used.bytes,
      diskFreeBytes: fs != null ? fs.bavail * fs.bsize : null,
      diskTotalBytes: fs != null ? fs.blocks * fs.bsize : null
    },
    revenue: {
      total: total.toString(),
      totalUsdc: formatUsdc(total),
      byMonth: revenue,
      byNetwork: [...networks].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([network, n]) => ({ network, payments: n.payments, amount: n.amount.toString(), usdc: formatUsdc(n.amount) }))
    },
    settlementNotes: { ...notes, paidUnfulfilledAmount: unfulfilled.toString(), paidUnfulfilledUsdc: formatUsdc(unfulfilled) },
    // the serves that share this ledger, each with the background work it holds
    frontEnds: frontEnds.map(f => ({ ...f, leases: leases.filter(l => l.holder === f.id).map(l => l.name) })),
    serve: null
  }
  if (d.live != null) {
    const peers = d.live.peers()
    report.serve = {
      pid: d.live.pid,
      version: d.live.version,
      uptimeSeconds: Math.floor((now.getTime() - d.live.startedAt) / 1000),
      url: d.live.url,
      peerId: d.live.peerId,
      multiaddrs: d.live.multiaddrs,
      peers: { connected: peers.length, list: peers.slice(0, 50) },
      payments: d.live.payments()
    }
  }
  return report
}
