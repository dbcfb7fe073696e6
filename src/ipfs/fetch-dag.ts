/**
 * Fetches a whole DAG into a staging area: breadth-first, with a bounded
 * number of blocks in flight, blocks we already hold read locally, every
 * block hash-checked, and a byte cap enforced on the bytes actually received
 * (a root's declared size is only a claim). If no block arrives for
 * `stallMs`, the attempt ends with a StalledError so the caller can retry
 * later; blocks staged so far are kept for the next attempt.
 *
 * What no later attempt can cure ends the fetch with a PermanentFetchError,
 * for the caller to fail the pin at once: more bytes than paid for, a link
 * to a codec or hash function this node cannot walk (ipfs/codecs.ts), a
 * block that does not decode as its codec, and a DAG whose repeated links
 * expand it beyond what was paid for (a root linking one 1 MiB leaf 40,000
 * times is 2 MiB of blocks but a 40 GiB file to the gateway). The expanded
 * size counts every path to a block, computed once all blocks are here.
 *
 * Blocks in flight start at INITIAL_WINDOW and grow by one per block that
 * arrives within a quarter of the stall timeout, up to `concurrency` and to
 * about WINDOW_BYTES of blocks (by the average size seen); a block that took
 * more than half the stall timeout halves them. Start small: an origin
 * running @helia/bitswap reads every block wanted from it before it sends the
 * first, so a large first window can outlast the stall timeout
 * (docs/internals.md, fetch-dag.ts).
 */
import type { Helia } from '@helia/interface'
import type { Blockstore } from 'interface-blockstore'
import type { CID } from 'multiformats/cid'
import { unwalkable } from './codecs.js'
import { linksOf } from './dag-links.js'
import type { BlockNetwork } from './network.js'
import type { StagedImport } from './staging.js'
import type { FetchBudget } from './fetch-budget.js'

/** A fetch that another attempt cannot complete: `reason` says why (for the pin's status_details). */
export class PermanentFetchError extends Error {
  override name = 'PermanentFetchError'
  constructor (readonly reason: string, message = reason) {
    super(message)
  }
}

export class DagTooLargeError extends PermanentFetchError {
  override name = 'DagTooLargeError'
  constructor (readonly limit: number, readonly received: number) {
    super(`the DAG is larger than the ${limit} bytes paid for`, `the DAG is larger than the ${limit} bytes paid for (${received} bytes received so far)`)
  }
}

/** Counting every repeated link, the DAG holds more than was paid for. */
export class DagExpandsError extends PermanentFetchError {
  override name = 'DagExpandsError'
  constructor (readonly limit: number, readonly unique: number) {
    super(`counting each repeated link, the DAG holds more than the ${limit} bytes paid for (its ${unique} bytes of distinct blocks are read over and over)`)
  }
}

/** A block this node cannot walk through: an unsupported codec or hash, or bytes that do not decode. */
export class UnwalkableDagError extends PermanentFetchError {
  override name = 'UnwalkableDagError'
}

export class StalledError extends Error {
  override name = 'StalledError'
}

export interface FetchProgress {
  blocks: number
  bytes: number
}

/** How a fetch went, for the fetcher's debug log (where the time went) */
export interface FetchTimings {
  /** from the start to the first block's bytes */
  firstBlockMs: number
  /** the most blocks wanted at once */
  peakInFlight: number
  /** the window at the end */
  window: number
}

export interface FetchDagOptions {
  root: CID
  staged: StagedImport
  /** the node's own blockstore: blocks found here are copied, not fetched */
  local: Pick<Blockstore, 'get' | 'has'>
  network: Pick<BlockNetwork, 'retrieve'>
  helia: Pick<Helia, 'getCodec'>
  maxBytes: number
  concurrency: number
  stallMs: number
  signal?: AbortSignal
  onProgress?: (p: FetchProgress) => void
  /** bytes wanted at once by every fetch together (fetch-budget.ts); without it, WINDOW_BYTES each */
  budget?: FetchBudget
}

/** blocks wanted at once when a fetch starts (see above) */
export const INITIAL_WINDOW = 2
/** the bytes wanted at once, at most (a bitswap message carries up to 4 MiB); also the fetches' shared budget (fetch-budget.ts) */
export const WINDOW_BYTES = 8 * 1024 * 1024
/** a want's cost in the shared budget before the fetch has seen a block */
const UNKNOWN_BLOCK_BYTES = 1024 * 1024

export async function fetchDag (o: FetchDagOptions): Promise<FetchProgress & { cids: CID[], timings: FetchTimings }> {
  const t0 = Date.now()
  const timings: FetchTimings = { firstBlockMs: -1, peakInFlight: 0, window: 0 }
  const stall = new AbortController()
  const signal = o.signal != null ? AbortSignal.any([o.signal, stall.signal]) : stall.signal
  let timer: NodeJS.Timeout | undefined
  const arm = (): void => {
    clearTimeout(timer)
    timer = setTimeout(() => { stall.abort(new StalledError(`no block arrived for ${Math.round(o.stallMs / 1000)} s`)) }, o.stallMs)
  }
  const progress: FetchProgress = { blocks: 0, bytes: 0 }
  // every block once, by index in discovery order (the breadth-first FIFO, read by index:
  // Array.shift would make a DAG of n blocks cost O(n²)); its size and its links as indexes
  const nodes: CID[] = [o.root]
  const index = new Map<string, number>([[o.root.toV1().toString(), 0]])
  const sizes: number[] = []
  const kids: Int32Array[] = []

  // blocks wanted at once: slow start, bounded by concurrency and by WINDOW_BYTES at the average block size
  let window = Math.min(INITIAL_WINDOW, o.concurrency)
  let largest = 0
  const one = async (i: number, held: { bytes: number }): Promise<void> => {
    const cid = nodes[i] as CID
    const wanted = Date.now()
    // the stall clock restarts as the bytes arrive, not after they are written to staging: on a
    // busy machine that write let the timer fire with the blocks already here
    const bytes = await blockBytes(cid, o, signal, (n) => {
      arm()
      if (timings.firstBlockMs < 0) timings.firstBlockMs = Date.now() - t0
      o.budget?.arrived(held.bytes, n)
      held.bytes = n
    })
    progress.blocks++
    progress.bytes += bytes.byteLength
    largest = Math.max(largest, bytes.byteLength)
    const took = Date.now() - wanted
    const grown = took > o.stallMs / 2 ? Math.floor(window / 2) : took < o.stallMs / 4 ? window + 1 : window
    window = Math.max(1, Math.min(o.concurrency, grown, Math.floor(WINDOW_BYTES / (progress.bytes / progress.blocks))))
    if (progress.bytes > o.maxBytes) throw new DagTooLargeError(o.maxBytes, progress.bytes)
    o.onProgress?.(progress)
    let links: CID[]
    try {
      links = await linksOf(o.helia, cid, bytes)
    } catch (err) {
      throw new UnwalkableDagError(`block ${cid} cannot be decoded as its codec (0x${cid.code.toString(16)}): ${(err as Error).message}`.slice(0, 300))
    }
    const out = new Int32Array(links.length)
    links.forEach((l, n) => {
      const k = l.toV1().toString()
      let at = index.get(k)
      if (at == null) {
        const why = unwalkable(l)
        if (why != null) throw new UnwalkableDagError(`the DAG links to ${k}, a block of ${why}`)
        at = nodes.length
        index.set(k, at)
        nodes.push(l)
      }
      out[n] = at
    })
    sizes[i] = bytes.byteLength
    kids[i] = out
  }

  let wake: (() => void) | undefined
  arm()
  try {
    await new Promise<void>((resolve, reject) => {
      let head = 0
      let active = 0
      let failed = false
      const pump = (): void => {
        while (!failed && active < window && head < nodes.length) {
          // what this want is counted at in the shared budget until its block arrives: the largest block so
          // far (a file's leaves are alike; its small root would make an average too low), a MiB before any
          const cost = largest > 0 ? largest : UNKNOWN_BLOCK_BYTES
          if (o.budget != null && !o.budget.tryTake(cost, active)) {
            o.budget.onRelease(pump)
            return
          }
          active++
          timings.peakInFlight = Math.max(timings.peakInFlight, active)
          const held = { bytes: cost }
          one(head++, held).then(() => {
            active--
            o.budget?.give(held.bytes)
            if (active === 0 && head >= nodes.length) resolve()
            else pump()
          }, (err: unknown) => {
            active--
            o.budget?.give(held.bytes)
            if (failed) return
            failed = true
            // a stall aborts every want in flight: report the stall, not the aborts
            reject(stall.signal.aborted ? stall.signal.reason : err)
            stall.abort(err)
          })
        }
      }
      wake = pump
      pump()
    })
  } finally {
    clearTimeout(timer)
    if (wake != null) o.budget?.forget(wake)
  }
  if (expandedSize(sizes, kids, o.maxBytes) > o.maxBytes) throw new DagExpandsError(o.maxBytes, progress.bytes)
  timings.window = window
  return { ...progress, cids: nodes, timings }
}

/**
 * The bytes of the DAG from block 0 down, each block counted once per path
 * that reaches it (post-order over the link indexes, iterative so a deep DAG
 * cannot exhaust the stack); sums stop growing past `limit`.
 */
export function expandedSize (sizes: number[], kids: Int32Array[], limit: number): number {
  if (sizes.length === 0) return 0
  const total = new Float64Array(sizes.length)
  const state = new Uint8Array(sizes.length) // 0 new, 1 open (children pushed), 2 done
  const stack: number[] = [0]
  while (stack.length > 0) {
    const i = stack[stack.length - 1] as number
    const links = kids[i] as Int32Array
    if (state[i] === 2) { stack.pop(); continue }
    if (state[i] === 0) {
      state[i] = 1
      for (const k of links) {
        if (state[k] === 1) throw new UnwalkableDagError('the DAG links back to itself')
        if (state[k] === 0) stack.push(k)
      }
      continue
    }
    let sum = sizes[i] as number
    for (const k of links) {
      sum += total[k] as number
      if (sum > limit) { sum = limit + 1; break }
    }
    total[i] = sum
    state[i] = 2
    stack.pop()
  }
  return total[0] as number
}

async function blockBytes (cid: CID, o: FetchDagOptions, signal: AbortSignal, arrived: (bytes: number) => void): Promise<Uint8Array> {
  if (await o.staged.blockstore.has(cid)) {
    const bytes = await readAll(o.staged.blockstore, cid)
    arrived(bytes.byteLength)
    return bytes
  }
  let bytes: Uint8Array
  // the abort reaches the node's own store too: a bucket that stopped answering would otherwise hold the
  // fetch (and serve's stop, which waits for it) until S3's timeouts and retries give up, about a minute
  if (await o.local.has(cid, { signal })) bytes = await readAll(o.local, cid, signal)
  else bytes = await o.network.retrieve(cid, signal)
  signal.throwIfAborted()
  arrived(bytes.byteLength)
  await o.staged.blockstore.put(cid, bytes)
  return bytes
}

async function readAll (bs: Pick<Blockstore, 'get'>, cid: CID, signal?: AbortSignal): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  for await (const c of bs.get(cid, signal != null ? { signal } : {})) chunks.push(c)
  return chunks.length === 1 ? chunks[0] as Uint8Array : Buffer.concat(chunks)
}
