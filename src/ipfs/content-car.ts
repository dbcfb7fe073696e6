/**
 * CAR v1 streams for the trustless gateway, built from the local blockstore
 * (see content.ts for the local-only / no-open-iterator / bounded-memory
 * rules, which hold here too).
 *
 * Layout of a response: the CAR header (roots), then the blocks read to walk
 * the path (so a client can verify each step), then the blocks at the end of
 * the path per `dag-scope`:
 * - block:  the terminus block only;
 * - entity: a UnixFS file's whole DAG (or, with `entity-bytes`, only the
 *   blocks covering the range), a HAMT directory's shard blocks, otherwise
 *   the block alone;
 * - all:    the whole DAG under the terminus.
 * Order is always depth-first, pre-order, links in order (`order=dfs`).
 * `dups=n` sends each block once; `dups=y` sends it every time the walk meets
 * it. Identity-hash CIDs are never sent as blocks.
 */
import * as dagPb from '@ipld/dag-pb'
import { exporter } from 'ipfs-unixfs-exporter'
import { CID } from 'multiformats/cid'
import { varint } from 'multiformats'
import { forgetHandedOver, releaseHandedOver } from '../runtime/buffers.js'
import {
  CODEC_CBOR, CODEC_DAG_PB, CODEC_RAW, InvalidContentError, UnsupportedContentError, decodeUnixFS, isIdentity,
  joinBlock, mapContentError, paceAhead, piecesLength, readAhead, readBlock, readBlockPieces, readBlockRange, walkFile, walkHamtShards,
  type LocalBlockstore, type ReadOptions
} from './content.js'

export type DagScope = 'block' | 'entity' | 'all'

/** `entity-bytes=from:to` as parsed: negative numbers count from the end. */
export interface EntityBytes {
  from: bigint
  to: bigint | '*'
}

export interface CarPlan {
  /** CarV1Header.roots */
  roots: CID[]
  /** blocks that verify the path from the root to the terminus, in order */
  pathBlocks: CID[]
  /** the CID at the end of the path */
  terminus: CID
  scope: DagScope
  /** for a file terminus with `entity-bytes`: the byte range [start, end) */
  range?: { start: bigint, end: bigint }
  /** send duplicate blocks (dups=y) */
  dups: boolean
}

/**
 * Resolves `entity-bytes` against a file of `size` bytes:
 * - `outside`: the range starts at/after the end of a non-empty file (400);
 * - `empty`: a zero-length range, the answer is the root block alone;
 * - otherwise the byte range [start, end) clamped to the file.
 */
export function resolveEntityBytes (size: bigint, eb: EntityBytes): { start: bigint, end: bigint } | 'empty' | 'outside' {
  let start = eb.from >= 0n ? eb.from : size + eb.from
  if (start < 0n) start = 0n
  let last: bigint // inclusive
  if (eb.to === '*') last = size - 1n
  else if (eb.to >= 0n) last = eb.to < size ? eb.to : size - 1n
  else last = size + eb.to
  if (eb.from >= 0n && start >= size && size > 0n) return 'outside'
  if (last < start) return 'empty'
  return { start, end: last + 1n }
}

/** The CARv1 header: varint length + dag-cbor `{roots: [...], version: 1}`. */
export function carHeader (roots: CID[]): Uint8Array {
  const parts: number[] = [0xa2]
  pushText(parts, 'roots')
  pushHead(parts, 4, roots.length)
  for (const root of roots) {
    parts.push(0xd8, 0x2a) // tag 42: CID
    pushHead(parts, 2, root.bytes.byteLength + 1)
    parts.push(0x00, ...root.bytes)
  }
  pushText(parts, 'version')
  parts.push(0x01)
  const body = Uint8Array.from(parts)
  const prefix = varint.encodeTo(body.byteLength, new Uint8Array(varint.encodingLength(body.byteLength)))
  const out = new Uint8Array(prefix.byteLength + body.byteLength)
  out.set(prefix, 0)
  out.set(body, prefix.byteLength)
  return out
}

function pushText (parts: number[], text: string): void {
  const bytes = new TextEncoder().encode(text)
  pushHead(parts, 3, bytes.byteLength)
  parts.push(...bytes)
}

function pushHead (parts: number[], major: number, n: number): void {
  const m = major << 5
  if (n < 24) parts.push(m | n)
  else if (n < 0x100) parts.push(m | 24, n)
  else if (n < 0x10000) parts.push(m | 25, n >> 8, n & 0xff)
  else parts.push(m | 26, (n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
}

/** The section prefix for a block: varint(len(cid)+len(block)) + cid bytes. */
function sectionPrefix (cid: CID, block: Uint8Array | number): Uint8Array {
  const length = cid.bytes.byteLength + (typeof block === 'number' ? block : block.byteLength)
  const n = varint.encodingLength(length)
  const out = new Uint8Array(n + cid.bytes.byteLength)
  varint.encodeTo(length, out, 0)
  out.set(cid.bytes, n)
  return out
}

/**
 * Streams the CAR described by `plan`. Each block is yielded as its section
 * prefix, then its bytes: a raw leaf (the bulk of a file's DAG) in the pieces
 * it was read in, paced and given up while held up long as a file's leaf
 * (readBlockRange: `options.pace`), so a stalled response holds its queue,
 * not the leaf; those pieces are the consumer's to free once written (handed
 * over). Any other block goes whole (it was decoded for its links, whose
 * CIDs are views of it: never freed early). Nothing is buffered beyond the
 * read-ahead. A block found missing mid-stream throws (the caller cuts the
 * response).
 */
export async function * carStream (bs: LocalBlockstore, plan: CarPlan, options: ReadOptions = {}): AsyncGenerator<Uint8Array, void, undefined> {
  const seen = new Set<string>()
  /** should this block go out? (records it for dups=n) */
  const admit = (cid: CID): boolean => {
    if (isIdentity(cid)) return false
    if (plan.dups) return true
    const key = cid.toString()
    if (seen.has(key)) return false
    seen.add(key)
    return true
  }

  yield carHeader(plan.roots)

  for (const cid of plan.pathBlocks) {
    if (!admit(cid)) continue
    const block = await readBlock(bs, cid, options)
    yield sectionPrefix(cid, block)
    yield block
  }

  const terminus = plan.terminus
  // a raw block has no links: whatever the scope, it is the block alone, sent in its pieces
  if (terminus.code === CODEC_RAW) {
    yield * rawSection(bs, terminus, await readBlockPieces(bs, terminus, options), admit, options)
    return
  }
  const block = await readBlock(bs, terminus, options)

  if (plan.scope === 'block') {
    if (admit(terminus)) { yield sectionPrefix(terminus, block); yield block }
    return
  }

  if (plan.scope === 'all') {
    yield * walkAll(bs, terminus, block, admit, (cid) => seen.has(cid.toString()), plan.dups, options)
    return
  }

  // entity
  if (terminus.code === CODEC_DAG_PB) {
    const { unixfs } = decodeUnixFS(terminus, block)
    if (unixfs.type === 'file' || unixfs.type === 'raw') {
      const walk = plan.range == null
        ? { start: 0n, end: unixfs.fileSize(), whole: true }
        : { start: plan.range.start, end: plan.range.end, whole: false }
      for await (const visit of walkFile(bs, terminus, block, walk, options)) {
        if (visit.cid.code === CODEC_RAW) { yield * rawSection(bs, visit.cid, visit.pieces, admit, options); continue }
        if (admit(visit.cid)) { yield sectionPrefix(visit.cid, piecesLength(visit.pieces)); yield * kept(visit.pieces) }
      }
      return
    }
    if (unixfs.type === 'hamt-sharded-directory') {
      for await (const shard of walkHamtShards(bs, terminus, block, options)) {
        if (admit(shard.cid)) { yield sectionPrefix(shard.cid, shard.block); yield * kept([shard.block]) }
      }
      return
    }
  }
  if (admit(terminus)) { yield sectionPrefix(terminus, block); yield block }
}

/** A raw block's section, its bytes paced and freed once written (readBlockRange); nothing when it is not admitted (its pieces freed). */
async function * rawSection (bs: LocalBlockstore, cid: CID, pieces: Uint8Array[], admit: (cid: CID) => boolean, options: ReadOptions): AsyncGenerator<Uint8Array, void, undefined> {
  const length = piecesLength(pieces)
  if (isIdentity(cid) || !admit(cid)) {
    for (const p of pieces) releaseHandedOver(p)
    return
  }
  const prefix = sectionPrefix(cid, length)
  // a full queue stops the response at the prefix as often as inside the block: held up there long, the block is freed too
  const block = await paceAhead(bs, cid, pieces, length, prefix.byteLength, options)
  yield prefix
  yield * readBlockRange(bs, cid, block, { start: 0, end: length }, options)
}

/** a decoded block's bytes: kept whole (its links are views of it), so the consumer does not free them */
function kept (pieces: Uint8Array[]): Uint8Array[] {
  for (const p of pieces) forgetHandedOver(p)
  return pieces
}

/**
 * Depth-first walk of everything under `cid`, iterative (an explicit stack of
 * child iterators) so that a long chain of blocks cannot exhaust the call
 * stack. On any exit every child iterator still on the stack is closed.
 */
async function * walkAll (bs: LocalBlockstore, cid: CID, block: Uint8Array, admit: (cid: CID) => boolean, isSeen: (cid: CID) => boolean, dups: boolean, options: ReadOptions): AsyncGenerator<Uint8Array, void, undefined> {
  const stack: Array<AsyncGenerator<[{ cid: CID }, Uint8Array[]], void, undefined>> = []
  /** the chunks to send for a block, after pushing its children (none when already sent) */
  const enter = async (c: CID, b: Uint8Array): Promise<Uint8Array[]> => {
    const identityBlock = isIdentity(c) // never sent, but its links are walked
    if (!identityBlock && !admit(c)) return [] // dups=n and already sent: so was its subtree
    let links = await linksOf(c, b)
    if (!dups) {
      // only a link's first occurrence can be sent: do not even read the others
      const firsts = new Map<string, CID>()
      for (const l of links) if (!isSeen(l)) firsts.set(l.toString(), l)
      links = [...firsts.values()]
    }
    if (links.length > 0) stack.push(readAhead(bs, links.map(l => ({ cid: l })), options))
    return identityBlock ? [] : [sectionPrefix(c, b), ...kept([b])]
  }
  try {
    for (const chunk of await enter(cid, block)) yield chunk
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as AsyncGenerator<[{ cid: CID }, Uint8Array[]], void, undefined>
      const next = await top.next()
      if (next.done === true) { stack.pop(); continue }
      const [child, childBlock] = next.value
      // a raw block has no links: sent in its pieces, as a file's leaf
      if (child.cid.code === CODEC_RAW) { yield * rawSection(bs, child.cid, childBlock, admit, options); continue }
      for (const chunk of await enter(child.cid, joinBlock(childBlock))) yield chunk
    }
  } finally {
    while (stack.length > 0) await stack.pop()?.return(undefined)
  }
}

/** The CIDs a block links to, in order, for the codecs we can decode. */
export async function linksOf (cid: CID, block: Uint8Array): Promise<CID[]> {
  switch (cid.code) {
    case CODEC_RAW:
    case CODEC_CBOR: // plain CBOR has no links (tag 42 means nothing in it)
      return []
    case CODEC_DAG_PB:
      try {
        return dagPb.decode(block).Links.map(l => l.Hash)
      } catch (err) {
        throw new InvalidContentError(`${cid} is not valid dag-pb: ${(err as Error).message}`)
      }
    default: {
      // dag-cbor, dag-json, json, cbor: let the exporter's codecs decode it
      let entry
      try {
        entry = await exporter(cid, { get: async function * () { yield block } })
      } catch (err) {
        const mapped = mapContentError(err)
        if (mapped instanceof UnsupportedContentError) throw new UnsupportedContentError(`cannot walk links of codec 0x${cid.code.toString(16)}`)
        throw mapped
      }
      if (entry.type !== 'object') return []
      const out: CID[] = []
      collectLinks(entry.object, out, 0)
      return out
    }
  }
}

function collectLinks (value: unknown, out: CID[], depth: number): void {
  if (value == null || typeof value !== 'object' || depth > 256) return
  const cid = CID.asCID(value)
  if (cid != null) { out.push(cid); return }
  if (value instanceof Uint8Array) return
  if (Array.isArray(value)) {
    for (const v of value) collectLinks(v, out, depth + 1)
    return
  }
  for (const v of Object.values(value)) collectLinks(v, out, depth + 1)
}
