/**
 * A CAR (CARv1 or CARv2) uploaded as a DAG built elsewhere: read as it
 * streams, each block hash-checked against its CID before it is staged, the
 * byte cap enforced on the CAR's own bytes. It must name exactly one root,
 * and hold the root's whole DAG: once read, the DAG is walked from the root
 * over the blocks' links, and the first block missing is named. Blocks the
 * root does not reach are left out (`reachable`: the caller stages only
 * those); a block sent twice is kept once. Codecs and hash functions are
 * those pind pins (codecs.ts); identity CIDs carry their bytes and are not
 * stored. A block is at most 2 MiB (what bitswap carries): a section that
 * claims more is refused before its bytes are buffered; a CAR holds at most
 * MAX_CAR_BLOCKS blocks.
 */
import { createDecoder } from '@ipld/car/decoder'
import { CID } from 'multiformats/cid'
import { identity } from 'multiformats/hashes/identity'
import { carReader, type BytesReader } from './car-reader.js'
import { codecOf, PIN_HASHERS, unknownCodec, unknownHash } from './codecs.js'
import { cidsIn } from './dag-links.js'
import { WriteBehind } from './write-behind.js'
import { TooLargeError, type ImportTarget } from './import.js'
import { PindError } from '../kernel/errors.js'

/** the largest block (and CAR header) read: bitswap's limit */
export const MAX_CAR_BLOCK = 2 * 1024 * 1024
/** blocks one CAR may hold (each is a staged file and a ledger reference): 100 MB of 1 KiB blocks */
export const MAX_CAR_BLOCKS = 100_000

/** A CAR that cannot be pinned: the message names the problem (and the first bad or missing CID). */
export class CarError extends PindError {
  override name = 'CarError'
}

export interface CarImportResult {
  /** the root */
  cid: CID
  /** bytes of the CAR read */
  carBytes: number
  /** blocks the root reaches (identity ones left out), each once, in the order they were read */
  reachable: CID[]
  /** bytes of those blocks */
  dagSize: number
}

const HASHERS = new Map(PIN_HASHERS.map(h => [h.code, h]))

/**
 * `blockBuffer`: where a block's bytes are read into (car-reader.ts), a buffer the blockstore
 * gives back once the block is written (the staging's chunk pool); by default a fresh one.
 * `ownsInput`: the source's pieces are this import's alone: each is freed once read past.
 */
export async function importCar (source: AsyncIterable<Uint8Array>, o: { blockstore: ImportTarget, maxBytes: number, maxBlocks?: number, signal?: AbortSignal, blockBuffer?: (size: number) => Uint8Array, ownsInput?: boolean }): Promise<CarImportResult> {
  const maxBlocks = o.maxBlocks ?? MAX_CAR_BLOCKS
  let carBytes = 0
  const counted = (async function * () {
    for await (const chunk of source) {
      o.signal?.throwIfAborted()
      carBytes += chunk.byteLength
      if (carBytes > o.maxBytes) throw new TooLargeError(o.maxBytes)
      yield chunk
    }
  })()
  const decoder = createDecoder(capped(carReader(counted, o.blockBuffer, o.ownsInput === true)))
  /** block (string) → its links and size, for the walk */
  const read = new Map<string, { cid: CID, links: CID[], size: number }>()
  // the next block is read and hashed while earlier ones are written
  const writer = new WriteBehind(o.blockstore)
  let roots: CID[]
  try {
    roots = (await decoder.header()).roots.map(owned)
    if (roots.length !== 1) throw new CarError(`a CAR must name exactly one root; this one names ${roots.length}${roots.length > 1 ? ` (${roots.slice(0, 3).join(', ')}${roots.length > 3 ? ', …' : ''})` : ''}`)
    for await (const block of decoder.blocks()) {
      const { bytes } = block
      const cid = owned(block.cid)
      const key = cid.toString()
      if (read.has(key)) continue
      if (read.size >= maxBlocks) throw new CarError(`the CAR holds more than ${maxBlocks} blocks, the most one upload may`)
      const why = unknownCodec(cid) ?? (cid.multihash.code === identity.code ? undefined : unknownHash(cid))
      if (why != null) throw new CarError(`block ${key} has ${why}`)
      if (!await matches(cid, bytes)) throw new CarError(`block ${key} does not match its CID (its bytes hash to something else)`)
      const links = linksOf(cid, bytes)
      if (cid.multihash.code !== identity.code) await writer.put(cid, bytes)
      read.set(key, { cid, links, size: bytes.byteLength })
    }
    await writer.flush()
  } catch (err) {
    // nothing still being written once the caller discards what was staged
    await writer.settle()
    // the store failed, not the CAR: not the client's 400
    if (writer.isWriteFailure(err)) throw err
    if (err instanceof CarError || err instanceof TooLargeError || (o.signal?.aborted === true)) throw err
    if ((err as Error)?.name === 'TooLargeError' || (err as Error)?.name === 'BodyTooLargeError') throw err
    throw new CarError(`the CAR cannot be read: ${(err as Error).message === 'Unexpected end of data' ? 'it is truncated' : (err as Error).message}`)
  }
  const root = roots[0] as CID
  // the walk: every block the root reaches must be here
  const reachable: CID[] = []
  let dagSize = 0
  const seen = new Set<string>()
  const todo: Array<{ cid: CID, from?: CID }> = [{ cid: root }]
  while (todo.length > 0) {
    const { cid, from } = todo.pop() as { cid: CID, from?: CID }
    const key = cid.toString()
    if (seen.has(key)) continue
    seen.add(key)
    let block = read.get(key)
    if (block == null && cid.multihash.code === identity.code) {
      const why = unknownCodec(cid)
      if (why != null) throw new CarError(`block ${key} has ${why}`)
      block = { cid, links: linksOf(cid, cid.multihash.digest), size: 0 }
    }
    if (block == null) {
      throw new CarError(from == null
        ? `the CAR names root ${key} but does not hold it`
        : `the CAR is missing block ${key} (linked from ${from.toString()}): a CAR must hold its root's whole DAG`)
    }
    if (cid.multihash.code !== identity.code) {
      reachable.push(block.cid)
      dagSize += block.size
    }
    for (let i = block.links.length - 1; i >= 0; i--) todo.push({ cid: block.links[i] as CID, from: cid })
  }
  // in the order read (the staging's commit order)
  const order = new Map([...read.keys()].map((k, i) => [k, i]))
  reachable.sort((a, b) => (order.get(a.toString()) ?? 0) - (order.get(b.toString()) ?? 0))
  return { cid: root, carBytes, reachable, dagSize }
}

/** a reader that refuses a section (a block, the header) larger than MAX_CAR_BLOCK before buffering it */
function capped (inner: BytesReader): BytesReader {
  return {
    upTo: async (n) => await inner.upTo(n),
    exactly: async (n, seek) => {
      if (n > MAX_CAR_BLOCK) throw new CarError(`the CAR has a section of ${n} bytes; a block may be at most ${MAX_CAR_BLOCK} bytes`)
      return await inner.exactly(n, seek)
    },
    seek: (n) => { inner.seek(n) },
    get pos () { return inner.pos }
  }
}

async function matches (cid: CID, bytes: Uint8Array): Promise<boolean> {
  const code = cid.multihash.code
  if (code === identity.code) return equal(cid.multihash.digest, bytes)
  const hasher = HASHERS.get(code)
  if (hasher == null) return false
  const digest = await hasher.digest(bytes)
  return equal(digest.digest, cid.multihash.digest)
}

function equal (a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0
}

/** the CIDs a block links to (identity ones included: they are walked through, never stored) */
function linksOf (cid: CID, bytes: Uint8Array): CID[] {
  const codec = codecOf(cid.code)
  if (codec == null || codec.name === 'raw') return []
  let value: unknown
  try {
    value = codec.decode(bytes)
  } catch (err) {
    throw new CarError(`block ${cid.toString()} is not valid ${codec.name}: ${(err as Error).message}`)
  }
  return cidsIn(value).map(owned)
}

/**
 * A CID with bytes of its own. The decoders' CIDs are views of the buffer they were read from:
 * the CAR reader's (a megabyte or so of the body, several blocks' bytes) or the block's own. Kept
 * until the import ends (the walk, the staging's list), each such view would keep its whole
 * buffer alive: the whole CAR in memory until the end, found by the collector's marking each time.
 */
function owned (cid: CID): CID {
  return CID.decode(cid.bytes.slice())
}
