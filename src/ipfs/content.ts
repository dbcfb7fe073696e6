/**
 * Read-side helpers over the node's LOCAL blockstore: resolve `cid + path`,
 * stat, stream a file's bytes (or a byte range) with bounded memory, list a
 * directory, and (in content-car.ts) stream a CAR.
 *
 * Rules that every function here keeps:
 * - Local only. The store must be the node's own FsBlockstore, never
 *   `helia.blockstore` (that one would go to the network on a miss). A missing
 *   block fails at once with ContentNotFoundError.
 * - No iterator is ever left open: a block is read by draining the store's
 *   `get()` generator completely before anyone sees its bytes (see readBlock),
 *   and read-ahead promises are settled before a generator finishes, however
 *   it finishes (end, error, consumer's `return()`).
 * - The AbortSignal is checked between block reads. It is deliberately NOT
 *   handed to `blockstore.get()`: blockstore-fs races `fs.open` against the
 *   signal and, when the signal wins, the file handle opened afterwards is
 *   never closed. Local block reads are short, so checking between them is
 *   enough to stop promptly.
 * - Memory is bounded by DAG depth x read-ahead window x block size, never by
 *   the size of a file: file bytes are pulled on demand (the caller's
 *   backpressure stops the walk), unlike ipfs-unixfs-exporter's file reader,
 *   which pushes every block into an unbounded queue.
 */
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { exporter, resolvers, type ReadableStorage } from 'ipfs-unixfs-exporter'
import type { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { identity } from 'multiformats/hashes/identity'
import type { Blockstore } from 'interface-blockstore'
import { forgetHandedOver, releaseHandedOver } from '../runtime/buffers.js'
import { PindError } from '../kernel/errors.js'

/**
 * What the gateway may read from: the node's local blockstore. A store whose
 * reads take longer (S3: a round trip each) says how many it wants in flight
 * per reader (`readAhead`, default 2); the process-wide budget still bounds
 * the total.
 */
export type LocalBlockstore = Pick<Blockstore, 'get' | 'has'> & { readonly readAhead?: number }

export interface ReadOptions {
  signal?: AbortSignal
  /** blocks read ahead of the consumer at each DAG level (default 2, min 1) */
  readAhead?: number
  /**
   * readFile: called before each piece is yielded with its size; a promise
   * means the consumer cannot take the piece yet (its client, or a budget,
   * holds it up) and settles once it can. A wait longer than STALL_MS makes
   * the read free the rest of its block and read it again afterwards, so a
   * consumer held up for long holds one piece, not a block
   * (http/gateway/pump.ts, http/send-budget.ts).
   */
  pace?: (bytes: number) => Promise<void> | undefined
}

/** How long readFile keeps the rest of a raw leaf while its consumer is held up (see ReadOptions.pace). */
export const STALL_MS = 2000

/** A block (or a path entry) is not held locally. */
export class ContentNotFoundError extends PindError {
  override name = 'ContentNotFoundError'
}

/** A block needed to answer is not in the local store. */
export class BlockMissingError extends ContentNotFoundError {
  override name = 'BlockMissingError'
}

/** Content we cannot interpret: an unsupported codec or a path into a block. */
export class UnsupportedContentError extends PindError {
  override name = 'UnsupportedContentError'
}

/** Content that is not what it claims to be (not UnixFS, inconsistent sizes). */
export class InvalidContentError extends PindError {
  override name = 'InvalidContentError'
}

export const CODEC_DAG_PB = dagPb.code
export const CODEC_RAW = raw.code
export const CODEC_DAG_CBOR = 0x71
export const CODEC_DAG_JSON = 0x0129
export const CODEC_JSON = 0x0200
export const CODEC_CBOR = 0x51

/** A block larger than this is refused (the ecosystem's limit is 2 MiB). */
export const MAX_BLOCK_BYTES = 8 * 1024 * 1024
/** File DAGs deeper than this are refused (balanced/trickle DAGs are shallow). */
const MAX_FILE_DEPTH = 64
const DEFAULT_READ_AHEAD = 2

export function isIdentity (cid: CID): boolean {
  return cid.multihash.code === identity.code
}

/** Is the block present locally? Identity CIDs always are. */
export async function hasBlock (bs: LocalBlockstore, cid: CID): Promise<boolean> {
  if (isIdentity(cid)) return true
  return await bs.has(cid)
}

/**
 * Reads one whole block. The store's generator is drained to the end (or has
 * thrown) before this returns, so nothing stays open whatever the caller does.
 */
export async function readBlock (bs: LocalBlockstore, cid: CID, options: ReadOptions = {}): Promise<Uint8Array> {
  const pieces = await readBlockPieces(bs, cid, options)
  const block = joinBlock(pieces)
  // a whole block is kept and shared (an entry's root block serves a sniff and a body): never
  // freed by a reader; pieces copied into it are not needed any more (runtime/buffers.ts)
  if (pieces.length === 1) forgetHandedOver(block)
  else for (const p of pieces) releaseHandedOver(p)
  return block
}

/**
 * Reads one whole block as the pieces the store gave it in (an S3 body's
 * pieces as they arrived, verified: no copy into one buffer), drained like
 * readBlock.
 */
export async function readBlockPieces (bs: LocalBlockstore, cid: CID, options: ReadOptions = {}): Promise<Uint8Array[]> {
  if (isIdentity(cid)) return [cid.multihash.digest]
  options.signal?.throwIfAborted()
  const chunks: Uint8Array[] = []
  let length = 0
  try {
    for await (const chunk of bs.get(cid)) {
      length += chunk.byteLength
      if (length > MAX_BLOCK_BYTES) throw new InvalidContentError(`block ${cid} is larger than ${MAX_BLOCK_BYTES} bytes`)
      chunks.push(chunk)
    }
  } catch (err) {
    if (isNotFound(err)) throw new BlockMissingError(`block ${cid} is not held by this node`)
    throw err
  }
  options.signal?.throwIfAborted()
  return chunks
}

/** A block's pieces as one buffer (no copy when there is one piece). */
export function joinBlock (pieces: readonly Uint8Array[]): Uint8Array {
  if (pieces.length === 1) return pieces[0] as Uint8Array
  let length = 0
  for (const p of pieces) length += p.byteLength
  const out = new Uint8Array(length)
  let at = 0
  for (const p of pieces) { out.set(p, at); at += p.byteLength }
  return out
}

/** the byte length of a block given as pieces */
export function piecesLength (pieces: readonly Uint8Array[]): number {
  let length = 0
  for (const p of pieces) length += p.byteLength
  return length
}

function isNotFound (err: unknown): boolean {
  return err instanceof Error && (err.name === 'NotFoundError' || (err as { code?: unknown }).code === 'ERR_NOT_FOUND')
}

/**
 * A ReadableStorage for ipfs-unixfs-exporter on top of readBlock: strips the
 * signal (see the header), checks it between blocks, optionally records the
 * CIDs read (the blocks needed to verify a path).
 */
export function exporterStorage (bs: LocalBlockstore, options: ReadOptions = {}, record?: CID[]): ReadableStorage {
  return {
    get: async function * (cid: CID) {
      record?.push(cid)
      yield await readBlock(bs, cid, options)
    }
  }
}

/** Maps ipfs-unixfs-exporter errors (matched by name) to ours. */
export function mapContentError (err: unknown): unknown {
  if (!(err instanceof Error)) return err
  if (err instanceof PindError) return err
  switch (err.name) {
    case 'NotFoundError':
    case 'BadPathError':
      return new ContentNotFoundError(err.message)
    case 'NotUnixFSError':
    case 'OverReadError':
    case 'UnderReadError':
      return new InvalidContentError(err.message)
    case 'NoResolverError':
      return new UnsupportedContentError(err.message)
    default:
      return err
  }
}

export interface ResolvedPath {
  /** the CID the request started from */
  root: CID
  /** the CID at the end of the path */
  cid: CID
  /** one CID per logical path step, root first (X-Ipfs-Roots) */
  roots: CID[]
  /** every block read to walk the path, in order: what a verifier needs (CAR) */
  traversed: CID[]
}

/**
 * Walks `segments` (already URL-decoded names) from `root` through UnixFS
 * directories (plain and HAMT-sharded) and dag-cbor/dag-json links. Reads
 * only the blocks along the path.
 */
export async function resolvePath (bs: LocalBlockstore, root: CID, segments: string[], options: ReadOptions = {}): Promise<ResolvedPath> {
  const traversed: CID[] = []
  const store = exporterStorage(bs, options, traversed)
  const roots: CID[] = [root]
  let cid = root
  let rest = [...segments]
  while (rest.length > 0) {
    const resolver = resolvers[cid.code]
    if (resolver == null) throw new UnsupportedContentError(`cannot walk a path through codec 0x${cid.code.toString(16)}`)
    let next: { cid: CID, rest: string[] } | undefined
    try {
      for await (const result of resolver(cid, rest, store, {})) {
        next = { cid: result.cid, rest: result.rest }
        break
      }
    } catch (err) {
      throw mapContentError(err)
    }
    if (next == null) throw new ContentNotFoundError(`no "${rest[0] ?? ''}" under ${cid}`)
    if (next.cid.equals(cid)) {
      if (cid.code === CODEC_DAG_PB || cid.code === CODEC_RAW || next.rest.length > 0) {
        throw new ContentNotFoundError(`${cid} has no entry "${rest[0] ?? ''}"`)
      }
      throw new UnsupportedContentError(`the path /${rest.join('/')} addresses data inside block ${cid}; only links can be followed`)
    }
    cid = next.cid
    rest = next.rest
    roots.push(cid)
  }
  options.signal?.throwIfAborted()
  return { root, cid, roots, traversed }
}

export interface FileEntry {
  kind: 'file'
  cid: CID
  /** file size in bytes */
  size: bigint
  /** the root block (a raw block is its own content) */
  block: Uint8Array
}

export interface DirectoryEntry {
  kind: 'directory'
  cid: CID
  sharded: boolean
  block: Uint8Array
  node: dagPb.PBNode
}

export interface SymlinkEntry {
  kind: 'symlink'
  cid: CID
  target: string
  block: Uint8Array
}

/** Any other block: dag-cbor, dag-json, json, cbor, UnixFS metadata, unknown codecs. */
export interface BlockEntry {
  kind: 'block'
  cid: CID
  codec: number
  block: Uint8Array
}

export type Entry = FileEntry | DirectoryEntry | SymlinkEntry | BlockEntry

/** Loads the root block of `cid` and says what it is. */
export async function loadEntry (bs: LocalBlockstore, cid: CID, options: ReadOptions = {}): Promise<Entry> {
  const block = await readBlock(bs, cid, options)
  if (cid.code === CODEC_RAW) return { kind: 'file', cid, size: BigInt(block.byteLength), block }
  if (cid.code !== CODEC_DAG_PB) return { kind: 'block', cid, codec: cid.code, block }
  const { node, unixfs } = decodeUnixFS(cid, block)
  switch (unixfs.type) {
    case 'file':
    case 'raw':
      return { kind: 'file', cid, size: unixfs.fileSize(), block }
    case 'directory':
      return { kind: 'directory', cid, sharded: false, block, node }
    case 'hamt-sharded-directory':
      return { kind: 'directory', cid, sharded: true, block, node }
    case 'symlink':
      return { kind: 'symlink', cid, block, target: new TextDecoder().decode(unixfs.data ?? new Uint8Array()) }
    default:
      return { kind: 'block', cid, codec: cid.code, block }
  }
}

/** Size in bytes of what a deserialized response would carry (files, blocks). */
export function entrySize (entry: Entry): bigint {
  switch (entry.kind) {
    case 'file': return entry.size
    case 'symlink': return BigInt(new TextEncoder().encode(entry.target).byteLength)
    default: return BigInt(entry.block.byteLength)
  }
}

/** stat: what `cid` is and its size, reading only its root block. */
export async function stat (bs: LocalBlockstore, cid: CID, options: ReadOptions = {}): Promise<{ kind: Entry['kind'], size: bigint }> {
  const entry = await loadEntry(bs, cid, options)
  return { kind: entry.kind, size: entrySize(entry) }
}

export function decodeUnixFS (cid: CID, block: Uint8Array): { node: dagPb.PBNode, unixfs: UnixFS } {
  try {
    const node = dagPb.decode(block)
    if (node.Data == null) throw new Error('no Data field')
    return { node, unixfs: UnixFS.unmarshal(node.Data) }
  } catch (err) {
    throw new InvalidContentError(`${cid} is not UnixFS: ${(err as Error).message}`)
  }
}

export interface ByteRange {
  /** first byte (inclusive) */
  offset: bigint
  /** number of bytes; to the end of the file when omitted */
  length?: bigint
}

/**
 * Streams the bytes of a file (or of `range` of it), reading only the blocks
 * that cover the range, pulled as the consumer asks for them.
 */
export async function * readFile (bs: LocalBlockstore, file: FileEntry, range: ByteRange = { offset: 0n }, options: ReadOptions = {}): AsyncGenerator<Uint8Array, void, undefined> {
  const start = range.offset < 0n ? 0n : range.offset
  const wantedEnd = range.length == null ? file.size : start + range.length
  const end = wantedEnd > file.size ? file.size : wantedEnd
  if (start >= end) return
  let produced = 0n
  for await (const visit of walkFile(bs, file.cid, file.block, { start, end, whole: false }, options)) {
    // (before any piece is freed: a freed one is empty)
    const length = piecesLength(visit.pieces)
    // a leaf's pieces that do not go out (outside the range, or a small part copied out of them) are
    // not needed any more; those that do go out are the consumer's to free (handed over, see pump.ts)
    if (visit.cid.code === CODEC_RAW) {
      for (const p of visit.pieces) if (visit.data?.some(d => d.buffer === p.buffer) !== true) releaseHandedOver(p)
    }
    if (visit.data == null) continue
    if (visit.cid.code !== CODEC_RAW) {
      for (const piece of visit.data) {
        const wait = options.pace?.(piece.byteLength)
        if (wait != null) await wait
        produced += BigInt(piece.byteLength)
        yield piece
      }
      continue
    }
    produced += yield * pacedBlock(bs, visit, length, visit.data, { start: start + produced, end }, options)
  }
  if (produced !== end - start) throw new InvalidContentError(`file ${file.cid} yielded ${produced} of ${end - start} bytes`)
}

/**
 * Yields `data`, the wanted part of a block read as `visit.pieces` (views of
 * them, or a copy), waiting for `options.pace` before each piece. Held up for
 * longer than STALL_MS, it frees the rest of the block (dropPieces) and reads
 * it again once it may go on, from where it stopped: a stalled reader holds
 * no more than its response's queue. `blockLength`: the block's, as read
 * (counted before any piece was freed); `range`: the wanted bytes in the
 * offsets `visit.pos` counts in, from the first not yet yielded. Returns
 * how many bytes it yielded.
 */
async function * pacedBlock (bs: LocalBlockstore, visit: FileVisit, blockLength: number, data: Uint8Array[], range: { start: bigint, end: bigint }, options: ReadOptions): AsyncGenerator<Uint8Array, bigint, undefined> {
  let done = 0n
  for (let k = 0; k < data.length;) {
    const piece = data[k] as Uint8Array
    const wait = options.pace?.(piece.byteLength)
    if (wait != null && await stalled(wait, () => { dropPieces(visit, data, k) })) {
      // held up for long: the rest of this block was freed; read it again and go on where it stopped
      const pieces = await readBlockPieces(bs, visit.cid, options)
      const length = piecesLength(pieces)
      if (length !== blockLength) throw new InvalidContentError(`block ${visit.cid} changed while it was read`)
      data = sliceRange(pieces, length, visit.pos, { start: range.start + done, end: range.end, whole: false }) ?? []
      for (const p of pieces) if (!data.some(d => d.buffer === p.buffer)) releaseHandedOver(p)
      visit = { ...visit, pieces }
      k = 0
      continue
    }
    if (wait != null) await wait
    done += BigInt(piece.byteLength)
    k++
    yield piece
  }
  return done
}

/**
 * Waits for `options.pace` before a small piece that goes ahead of a raw
 * block read as `pieces` (a CAR section's prefix): the consumer may be held
 * up there as well as inside the block. Held up for longer than STALL_MS, it
 * frees `pieces` and returns the block read again once it may go on; else
 * `pieces` itself. `blockLength`: the block's, counted before any piece was
 * freed. The piece's budget is taken (pace) by the time it returns.
 */
export async function paceAhead (bs: LocalBlockstore, cid: CID, pieces: Uint8Array[], blockLength: number, bytes: number, options: ReadOptions): Promise<Uint8Array[]> {
  const wait = options.pace?.(bytes)
  if (wait == null) return pieces
  if (!await stalled(wait, () => { for (const p of pieces) releaseHandedOver(p) })) return pieces
  const again = await readBlockPieces(bs, cid, options)
  if (piecesLength(again) !== blockLength) throw new InvalidContentError(`block ${cid} changed while it was read`)
  return again
}

/**
 * Streams bytes [start, end) of one block (any codec), already read as
 * `pieces` (readBlockPieces), paced like a file's raw leaf (pacedBlock): the
 * pieces it yields are the consumer's to free (handed over, see pump.ts).
 */
export async function * readBlockRange (bs: LocalBlockstore, cid: CID, pieces: Uint8Array[], range: { start: number, end: number }, options: ReadOptions = {}): AsyncGenerator<Uint8Array, void, undefined> {
  const visit: FileVisit = { cid, pos: 0n, pieces }
  const length = piecesLength(pieces)
  const data = sliceRange(pieces, length, 0n, { start: BigInt(range.start), end: BigInt(range.end), whole: false }) ?? []
  for (const p of pieces) if (!data.some(d => d.buffer === p.buffer)) releaseHandedOver(p)
  yield * pacedBlock(bs, visit, length, data, { start: BigInt(range.start), end: BigInt(range.end) }, options)
}

export interface FileVisit {
  cid: CID
  /** the file offset of the block's first data byte */
  pos: bigint
  /** the block, in the pieces the store gave it in */
  pieces: Uint8Array[]
  /** the file bytes this block contributes inside the wanted range, if any (views of `pieces`, or a copy of a small part) */
  data?: Uint8Array[]
}

export interface FileWalk {
  /** wanted byte range [start, end) */
  start: bigint
  end: bigint
  /** visit every block of the file whatever the range (CAR dag-scope=entity) */
  whole: boolean
}

/**
 * Depth-first (pre-order) walk of a UnixFS file DAG: each block is yielded
 * before its children, children in link order; only the subtrees that
 * intersect [start, end) unless `whole`. Checks every child's size against
 * its parent's blocksizes so a lying DAG cannot shift bytes.
 */
export function walkFile (bs: LocalBlockstore, cid: CID, block: Uint8Array, walk: FileWalk, options: ReadOptions = {}): AsyncGenerator<FileVisit, void, undefined> {
  return walkFileNode(bs, cid, [block], 0n, undefined, walk, options, 0)
}

async function * walkFileNode (bs: LocalBlockstore, cid: CID, pieces: Uint8Array[], pos: bigint, expected: bigint | undefined, walk: FileWalk, options: ReadOptions, depth: number): AsyncGenerator<FileVisit, void, undefined> {
  if (cid.code === CODEC_RAW) {
    // a leaf's bytes stay in the pieces they were read in: written out as they are
    const length = piecesLength(pieces)
    if (expected != null && BigInt(length) !== expected) {
      throw new InvalidContentError(`raw leaf ${cid} has ${length} bytes, its parent says ${expected}`)
    }
    yield { cid, pos, pieces, data: sliceRange(pieces, length, pos, walk) }
    return
  }
  if (cid.code !== CODEC_DAG_PB) throw new InvalidContentError(`file DAG links to ${cid}, which is neither dag-pb nor raw`)
  const block = joinBlock(pieces)
  const { node, unixfs } = decodeUnixFS(cid, block)
  if (unixfs.type !== 'file' && unixfs.type !== 'raw') throw new InvalidContentError(`file DAG links to a UnixFS ${unixfs.type} (${cid})`)
  if (node.Links.length !== unixfs.blockSizes.length) throw new InvalidContentError(`${cid}: ${node.Links.length} links but ${unixfs.blockSizes.length} blocksizes`)
  if (expected != null && unixfs.fileSize() !== expected) {
    throw new InvalidContentError(`${cid} holds ${unixfs.fileSize()} bytes, its parent says ${expected}`)
  }
  const inline = unixfs.data ?? new Uint8Array(0)
  yield { cid, pos, pieces: [block], data: sliceRange([inline], inline.byteLength, pos, walk) }
  if (node.Links.length === 0) return
  if (depth >= MAX_FILE_DEPTH) throw new InvalidContentError(`file DAG under ${cid} is deeper than ${MAX_FILE_DEPTH}`)
  const children: Array<{ cid: CID, pos: bigint, size: bigint }> = []
  let childPos = pos + BigInt(inline.byteLength)
  for (let i = 0; i < node.Links.length; i++) {
    const size = unixfs.blockSizes[i] as bigint
    const link = node.Links[i] as dagPb.PBLink
    const at = childPos
    childPos += size
    if (walk.whole || (at + size > walk.start && at < walk.end)) children.push({ cid: link.Hash, pos: at, size })
    if (!walk.whole && childPos >= walk.end) break
  }
  for await (const [child, childBlock] of readAhead(bs, children, options)) {
    yield * walkFileNode(bs, child.cid, childBlock, child.pos, child.size, walk, options, depth + 1)
  }
}

/**
 * Waits for `wait`; if it has not settled within STALL_MS, calls `drop`
 * first (and still waits). True when it dropped.
 */
async function stalled (wait: Promise<void>, drop: () => void): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>(resolve => { timer = setTimeout(() => { resolve('late') }, STALL_MS) })
  try {
    if (await Promise.race([wait, late]) !== 'late') return false
  } finally {
    clearTimeout(timer)
  }
  drop()
  await wait
  return true
}

/**
 * Frees what a leaf read holds from piece `k` of `data` on: the pieces read
 * from disk are freed at once (they are this reader's alone), and every array
 * that refers to them is emptied in place (the walk's and the read-ahead's
 * frames hold the same arrays), so an S3 body's pieces are left to the
 * garbage collector. Pieces before `k` are the consumer's (on their way out).
 */
function dropPieces (visit: FileVisit, data: Uint8Array[], k: number): void {
  const sent = new Set(data.slice(0, k).map(d => d.buffer))
  for (const p of visit.pieces) if (!sent.has(p.buffer)) releaseHandedOver(p)
  for (const d of data.slice(k)) if (!sent.has(d.buffer)) releaseHandedOver(d)
  visit.pieces.length = 0
  data.length = k
}

/** the parts of `pieces` (a block of `length` bytes at file offset `pos`) inside the wanted range */
function sliceRange (pieces: readonly Uint8Array[], length: number, pos: bigint, walk: FileWalk): Uint8Array[] | undefined {
  const dataEnd = pos + BigInt(length)
  const s = walk.start > pos ? Number(walk.start - pos) : 0
  const e = walk.end < dataEnd ? Number(walk.end - pos) : length
  if (s >= e) return undefined
  if (s === 0 && e === length) return [...pieces]
  const parts: Uint8Array[] = []
  let at = 0
  for (const p of pieces) {
    const pEnd = at + p.byteLength
    if (pEnd > s && at < e) parts.push(p.subarray(Math.max(s, at) - at, Math.min(e, pEnd) - at))
    at = pEnd
    if (at >= e) break
  }
  // a small part of a large block is copied, so the block is not kept alive
  // while the part waits in a slow client's socket buffer (a copy: a disk
  // read's pieces are Buffers, whose slice() is a view of the same memory)
  if (e - s < length / 2 && length > 65536) return [parts.length === 1 ? new Uint8Array(parts[0] as Uint8Array) : joinBlock(parts)]
  return parts
}

/**
 * Yields `[item, block pieces]` in order (joinBlock makes one buffer of
 * them), keeping up to `readAhead` block reads in flight. However the
 * consumer stops, outstanding reads are awaited (and their failures
 * swallowed) before the generator completes.
 */
export async function * readAhead<T extends { cid: CID }> (bs: LocalBlockstore, items: T[], options: ReadOptions = {}): AsyncGenerator<[T, Uint8Array[]], void, undefined> {
  const window = Math.max(1, options.readAhead ?? bs.readAhead ?? DEFAULT_READ_AHEAD)
  // each reader always gets the block it asks for; blocks read AHEAD of that come
  // from a process-wide budget, so many concurrent readers cannot multiply memory
  const pending: Array<{ block: Promise<Uint8Array[]>, budgeted: boolean }> = []
  let next = 0
  const launch = (budgeted: boolean): void => {
    const item = items[next++] as T
    const p = readBlockPieces(bs, item.cid, options)
    p.catch(() => {}) // observed below; this only prevents an unhandled rejection meanwhile
    pending.push({ block: p, budgeted })
  }
  const fill = (): void => {
    if (next < items.length && pending.length === 0) launch(false)
    while (pending.length < window && next < items.length && prefetch.take()) launch(true)
  }
  try {
    for (let i = 0; i < items.length; i++) {
      // the block asked for now (if no read ahead got it) and, budget permitting, those after it: nothing
      // more is read for a consumer that has not asked, so one that stalls holds one block, not two
      fill()
      const head = pending.shift() as { block: Promise<Uint8Array[]>, budgeted: boolean }
      let block: Uint8Array[]
      try {
        block = await head.block
      } finally {
        if (head.budgeted) prefetch.give()
      }
      yield [items[i] as T, block]
    }
  } finally {
    await Promise.allSettled(pending.map(p => p.block))
    for (const p of pending) if (p.budgeted) prefetch.give()
  }
}

/**
 * Blocks read ahead across all readers at once (about 1 MiB each). Eight
 * keeps one S3 reader's whole window (s3-client's readAhead) or eight disk
 * readers' one block ahead; readers past that read one block at a time.
 */
const PREFETCH_BUDGET = 8
const prefetch = {
  free: PREFETCH_BUDGET,
  take (): boolean {
    if (this.free <= 0) return false
    this.free--
    return true
  },
  give (): void { this.free++ }
}

export interface DirectoryItem {
  name: string
  cid: CID
  /** the link's Tsize: DAG size, not file size (no child block is read) */
  size: bigint
}

/**
 * Lists a directory without reading its children. Plain directories need
 * no I/O; HAMT-sharded ones read their shard blocks lazily, as consumed.
 */
export async function * listDirectory (bs: LocalBlockstore, dir: DirectoryEntry, options: ReadOptions = {}): AsyncGenerator<DirectoryItem, void, undefined> {
  if (!dir.sharded) {
    for (const link of dir.node.Links) {
      yield { name: link.Name ?? '', cid: link.Hash, size: BigInt(link.Tsize ?? 0) }
    }
    return
  }
  try {
    const entry = await exporter(dir.cid, exporterStorage(bs, options))
    if (entry.type !== 'directory') throw new InvalidContentError(`${dir.cid} is not a directory`)
    for await (const item of entry.entries()) {
      yield { name: item.name, cid: item.cid, size: item.size }
    }
  } catch (err) {
    throw mapContentError(err)
  }
}

/** The CID of entry `name` in a directory, or undefined when absent. */
export async function findChild (bs: LocalBlockstore, dir: DirectoryEntry, name: string, options: ReadOptions = {}): Promise<CID | undefined> {
  if (!dir.sharded) return dir.node.Links.find(l => l.Name === name)?.Hash
  try {
    return (await resolvePath(bs, dir.cid, [name], options)).cid
  } catch (err) {
    // "no such entry" is an answer; a missing shard block is not
    if (err instanceof ContentNotFoundError && !(err instanceof BlockMissingError)) return undefined
    throw err
  }
}

/**
 * Yields the blocks of a HAMT-sharded directory's shard tree (root first,
 * depth-first), not the entries': what `dag-scope=entity` means for it.
 */
export async function * walkHamtShards (bs: LocalBlockstore, cid: CID, block: Uint8Array, options: ReadOptions = {}, depth = 0): AsyncGenerator<{ cid: CID, block: Uint8Array }, void, undefined> {
  const { node, unixfs } = decodeUnixFS(cid, block)
  if (unixfs.type !== 'hamt-sharded-directory' || unixfs.fanout == null) throw new InvalidContentError(`${cid} is not a HAMT shard`)
  yield { cid, block }
  if (depth >= MAX_FILE_DEPTH) throw new InvalidContentError(`HAMT under ${cid} is too deep`)
  const padLength = (unixfs.fanout - 1n).toString(16).length
  const shards = node.Links.filter(l => (l.Name ?? '').length === padLength).map(l => ({ cid: l.Hash }))
  for await (const [shard, shardBlock] of readAhead(bs, shards, options)) {
    yield * walkHamtShards(bs, shard.cid, joinBlock(shardBlock), options, depth + 1)
  }
}
