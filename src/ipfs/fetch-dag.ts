/**
 * Fetches a whole DAG into a staging area: breadth-first, with a bounded
 * number of blocks in flight (not one block at a time), blocks we already
 * hold read locally, every block hash-checked, and a byte cap enforced on the
 * bytes actually received (a root's declared size is only a claim). If no
 * block arrives for `stallMs`, the attempt ends with a StalledError so the
 * caller can retry later; blocks staged so far are kept for the next attempt.
 */
import type { Helia } from '@helia/interface'
import type { Blockstore } from 'interface-blockstore'
import type { CID } from 'multiformats/cid'
import { linksOf } from './dag-links.js'
import type { BlockNetwork } from './network.js'
import type { StagedImport } from './staging.js'

export class DagTooLargeError extends Error {
  override name = 'DagTooLargeError'
  constructor (readonly limit: number, readonly received: number) {
    super(`the DAG is larger than the ${limit} bytes paid for (${received} bytes received so far)`)
  }
}

export class StalledError extends Error {
  override name = 'StalledError'
}

export interface FetchProgress {
  blocks: number
  bytes: number
}

export interface FetchDagOptions {
  root: CID
  staged: StagedImport
  /** the node's own blockstore: blocks found here are copied, not fetched */
  local: Blockstore
  network: Pick<BlockNetwork, 'retrieve'>
  helia: Pick<Helia, 'getCodec'>
  maxBytes: number
  concurrency: number
  stallMs: number
  signal?: AbortSignal
  onProgress?: (p: FetchProgress) => void
}

export async function fetchDag (o: FetchDagOptions): Promise<FetchProgress & { cids: CID[] }> {
  const stall = new AbortController()
  const signal = o.signal != null ? AbortSignal.any([o.signal, stall.signal]) : stall.signal
  let timer: NodeJS.Timeout | undefined
  const arm = (): void => {
    clearTimeout(timer)
    timer = setTimeout(() => { stall.abort(new StalledError(`no block arrived for ${Math.round(o.stallMs / 1000)} s`)) }, o.stallMs)
  }
  const progress: FetchProgress = { blocks: 0, bytes: 0 }
  const cids: CID[] = []

  const one = async (cid: CID): Promise<CID[]> => {
    const bytes = await blockBytes(cid, o, signal)
    arm()
    progress.blocks++
    progress.bytes += bytes.byteLength
    if (progress.bytes > o.maxBytes) throw new DagTooLargeError(o.maxBytes, progress.bytes)
    cids.push(cid)
    o.onProgress?.(progress)
    return await linksOf(o.helia, cid, bytes)
  }

  arm()
  try {
    await new Promise<void>((resolve, reject) => {
      const seen = new Set<string>([o.root.toV1().toString()])
      // a FIFO read by index: Array.shift would make a DAG of n blocks cost O(n²)
      const pending: CID[] = [o.root]
      let head = 0
      let active = 0
      let failed = false
      const pump = (): void => {
        while (!failed && active < o.concurrency && head < pending.length) {
          const cid = pending[head++] as CID
          if (head > 4096 && head * 2 > pending.length) { pending.splice(0, head); head = 0 }
          active++
          one(cid).then((links) => {
            active--
            for (const l of links) {
              const k = l.toV1().toString()
              if (!seen.has(k)) { seen.add(k); pending.push(l) }
            }
            if (active === 0 && head >= pending.length) resolve()
            else pump()
          }, (err: unknown) => {
            active--
            if (failed) return
            failed = true
            // a stall aborts every want in flight: report the stall, not the aborts
            reject(stall.signal.aborted ? stall.signal.reason : err)
            stall.abort(err)
          })
        }
      }
      pump()
    })
  } finally {
    clearTimeout(timer)
  }
  return { ...progress, cids }
}

async function blockBytes (cid: CID, o: FetchDagOptions, signal: AbortSignal): Promise<Uint8Array> {
  if (await o.staged.blockstore.has(cid)) return await readAll(o.staged.blockstore, cid)
  let bytes: Uint8Array
  if (await o.local.has(cid)) bytes = await readAll(o.local, cid)
  else bytes = await o.network.retrieve(cid, signal)
  signal.throwIfAborted()
  await o.staged.blockstore.put(cid, bytes)
  return bytes
}

async function readAll (bs: Blockstore, cid: CID): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  for await (const c of bs.get(cid)) chunks.push(c)
  return chunks.length === 1 ? chunks[0] as Uint8Array : Buffer.concat(chunks)
}
