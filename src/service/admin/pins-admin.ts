/**
 * `pind pins` as operations on the ledger: list any owner's pins with the
 * filters of GET /pins, and take pins down (by requestid, or every pin of a
 * CID) with a reason the owner sees in status_details. The same functions
 * run inside a live serve (over the admin socket) and in the CLI on a
 * stopped data dir.
 */
import { z } from 'zod/v4'
import { CID } from 'multiformats/cid'
import { InvalidInputError, NotFoundError } from '../../kernel/errors.js'
import type { PinLedger } from '../../ledger/pins.js'
import type { PinRecord } from '../../ledger/records.js'
import { parsePinQuery } from '../pins/pin-query.js'
import { toPinStatus, type PinStatus } from '../pins/pin-status.js'
import type { Reply } from './reply.js'

/** what `pind pins` asks (the admin channel's POST /pins body, validated with this) */
export const PinsOp = z.discriminatedUnion('op', [
  /** `query`: GET /pins's query parameters (cid, name, match, status, before, after, limit, meta) */
  z.object({ op: z.literal('ls'), owner: z.string().optional(), query: z.record(z.string(), z.union([z.string(), z.array(z.string())])).optional() }),
  z.object({ op: z.literal('rm'), target: z.string(), reason: z.string() })
])
export type PinsOp = z.output<typeof PinsOp>

export interface PinsAdminDeps {
  ledger: Pick<PinLedger, 'get' | 'isLive' | 'list' | 'requestidsOfCid' | 'takeDown'>
  delegates?: () => string[]
}

export const MAX_REASON = 1000
const ADDRESS = /^0x[0-9a-fA-F]{40}$/

export type OperatorPinStatus = PinStatus & { owner: string }

/** what POST /pins answers (`pind pins`) */
export type PinsReply = Reply<Awaited<ReturnType<typeof run>>>
export const runPinsOp: (op: PinsOp, d: PinsAdminDeps) => Promise<PinsReply> = run

async function run (op: PinsOp, d: PinsAdminDeps) {
  switch (op?.op) {
    case 'ls': {
      const params = new URLSearchParams()
      for (const [k, v] of Object.entries(op.query ?? {})) for (const one of Array.isArray(v) ? v : [v]) params.append(k, String(one))
      const q = parsePinQuery(params)
      if (op.owner != null && !ADDRESS.test(op.owner)) throw new InvalidInputError('the owner must be a 0x address')
      const { count, results } = await d.ledger.list(op.owner?.toLowerCase(), q, new Date())
      const delegates = d.delegates?.() ?? []
      return { count, results: results.map(p => view(p, delegates)) }
    }
    case 'rm': {
      if (typeof op.reason !== 'string' || op.reason.trim() === '') throw new InvalidInputError('rm needs a reason (why it is taken down): the owner sees it in the pin\'s status_details')
      if (op.reason.length > MAX_REASON) throw new InvalidInputError(`the reason is longer than ${MAX_REASON} characters`)
      if (typeof op.target !== 'string' || op.target === '') throw new InvalidInputError('rm needs a requestid or a CID')
      const reason = op.reason.trim()
      const cid = parseCid(op.target)
      const ids = cid != null ? await d.ledger.requestidsOfCid(cid) : [op.target]
      const taken: PinRecord[] = []
      const at = new Date()
      for (const id of ids) {
        const down = await d.ledger.takeDown(id, reason, at)
        if (down == null) continue
        taken.push(down)
      }
      if (taken.length === 0) {
        throw new NotFoundError(cid != null
          ? `no pin of ${op.target.slice(0, 100)} to take down (none, or all removed or taken down already)`
          : `no pin with requestid ${op.target.slice(0, 100)} to take down (none, or removed or taken down already); give a requestid or a CID`)
      }
      const rootCid = cid ?? CID.parse((taken[0] as PinRecord).cid)
      const delegates = d.delegates?.() ?? []
      return {
        removed: taken.map(p => view(p, delegates)),
        reason,
        // another live pin of the same CID keeps it served (rm by requestid leaves the CID's other pins)
        stillServedBy: await stillServedBy(d.ledger, rootCid)
      }
    }
    default:
      throw new InvalidInputError('unknown pins operation')
  }
}

function view (pin: PinRecord, delegates: string[]): OperatorPinStatus {
  return { ...toPinStatus(pin, delegates), owner: pin.owner }
}

/** the live pins of a CID, in the order the ledger lists them */
async function stillServedBy (ledger: PinsAdminDeps['ledger'], cid: CID): Promise<string[]> {
  const live: string[] = []
  for (const id of await ledger.requestidsOfCid(cid)) {
    const p = await ledger.get(id)
    if (p != null && ledger.isLive(p)) live.push(id)
  }
  return live
}

function parseCid (s: string): CID | undefined {
  try { return CID.parse(s) } catch { return undefined }
}
