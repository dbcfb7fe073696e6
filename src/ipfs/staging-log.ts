/**
 * One import's staged blocks in a single append-only file (the staging of
 * blocks bound for S3: see staging.ts). Each block is one record:
 *
 *   "PSB1" | CID length (u16 LE) | 0 (u16) | data length (u32 LE) | CID | data
 *
 * A put reserves its record's place at the end of the file and writes it
 * there in one positional write, so puts run side by side, each in its own
 * place. The file is flushed behind the import: once SYNC_EVERY bytes have
 * been written since the last fdatasync began, another begins (one at a time
 * in the background), so `synced` (seal, commit) flushes only the tail: one
 * file and a few flushes instead of a file, an fdatasync and its journal
 * commit per block.
 *
 * Where each block lies is kept in memory (its name → offset, size). After a
 * crash `recover` rebuilds that by reading the records back from the start: a
 * record that has no valid header or is cut short by the end of the file ends
 * it (a torn tail), and a block counts only if its bytes hash to its CID (a
 * whole record that does not is noted as damaged). A record written after a
 * failed write is found in memory only: a sealed import, the only kind taken
 * over after a crash, had no failed write (its import would have failed).
 */
import { open, type FileHandle } from 'node:fs/promises'
import { CID } from 'multiformats/cid'
import { blockName, type StagedBlock } from './block-backend.js'
import { hashesTo } from './codecs.js'

/** "PSB1", read as a u32 LE */
const MAGIC = 0x31425350
const HEADER = 12
/** bytes written between background flushes */
export const SYNC_EVERY = 2 * 1_048_576
/** the sha2-256 multihash code: the only hash an upload writes */

interface Place { cid: CID, offset: number, size: number }

export class StagingLog {
  /** blocks written, by name (the multihash: as blockstore-fs, the same bytes under a CIDv0 and a CIDv1 are one block) */
  private readonly places = new Map<string, Place>()
  private readonly writing = new Map<string, Promise<void>>()
  /** blocks `recover` found whole but not hashing to their CIDs */
  private readonly damaged = new Set<string>()
  /** where the next record goes */
  private end = 0
  /** bytes of records whose write completed */
  private written = 0
  /** `written` when the latest fdatasync began, and when the latest one that succeeded began */
  private flushStart = 0
  private durable = 0
  /** fdatasyncs running (they never reject: a failure is kept in syncError) */
  private readonly flushes = new Set<Promise<void>>()
  private syncError: unknown

  private constructor (readonly path: string, private fh: FileHandle | undefined, private readonly onWritten?: (cid: CID, size: number) => void) {}

  /** A new, empty log at `path` (which must not exist); `onWritten` is told of each block once its record is written. */
  static async create (path: string, onWritten?: (cid: CID, size: number) => void): Promise<StagingLog> {
    return new StagingLog(path, await open(path, 'wx+'), onWritten)
  }

  /**
   * The valid blocks of a log left by an earlier process (read only): every
   * record up to the first torn one whose bytes hash to its CID (sha2-256).
   */
  static async recover (path: string): Promise<StagingLog> {
    const log = new StagingLog(path, undefined)
    const fh = await open(path, 'r')
    try {
      const { size: fileSize } = await fh.stat()
      const header = Buffer.alloc(HEADER)
      let at = 0
      while (at + HEADER <= fileSize) {
        if ((await fh.read(header, 0, HEADER, at)).bytesRead < HEADER || header.readUInt32LE(0) !== MAGIC) break
        const cidLength = header.readUInt16LE(4)
        const size = header.readUInt32LE(8)
        const offset = at + HEADER + cidLength
        if (offset + size > fileSize) break
        const body = Buffer.alloc(cidLength + size)
        if ((await fh.read(body, 0, body.byteLength, at + HEADER)).bytesRead < body.byteLength) break
        let cid: CID
        try {
          cid = CID.decode(body.subarray(0, cidLength))
        } catch {
          break
        }
        if (hashesTo(cid, body.subarray(cidLength))) log.places.set(blockName(cid), { cid, offset, size })
        else log.damaged.add(blockName(cid))
        at = offset + size
      }
    } finally {
      await fh.close()
    }
    return log
  }

  has (cid: CID): boolean {
    return this.places.has(blockName(cid))
  }

  /** whether `recover` found a record of this block whose bytes do not hash to its CID */
  isDamaged (cid: CID): boolean {
    return this.damaged.has(blockName(cid))
  }

  /** a staged block's size (undefined: not staged) */
  sizeOf (cid: CID): number | undefined {
    return this.places.get(blockName(cid))?.size
  }

  /** The blocks held, each once, as the block backend's commit takes them. */
  blocks (): StagedBlock[] {
    return [...this.places.values()].map(p => ({ cid: p.cid, path: this.path, offset: p.offset, size: p.size, whole: false }))
  }

  /** Writes a block's record (once: the same block again waits for the first write). */
  async put (cid: CID, bytes: Uint8Array): Promise<void> {
    const name = blockName(cid)
    if (this.places.has(name)) return
    const inFlight = this.writing.get(name)
    if (inFlight != null) {
      await inFlight
      return
    }
    const done = this.append(name, cid, bytes)
    this.writing.set(name, done)
    try {
      await done
    } finally {
      this.writing.delete(name)
    }
  }

  /** A staged block's bytes (undefined: not staged). */
  async get (cid: CID): Promise<Uint8Array | undefined> {
    const place = this.places.get(blockName(cid))
    if (place == null) return undefined
    const bytes = Buffer.allocUnsafe(place.size)
    const fh = this.fh ?? await open(this.path, 'r')
    try {
      await readFully(fh, bytes, place.offset)
    } finally {
      if (fh !== this.fh) await fh.close()
    }
    return bytes
  }

  /**
   * Every block written so far is on disk (fdatasync'd); throws the first
   * flush failure. The tail's flush starts at once, beside a background one
   * still running (which covers less).
   */
  async synced (): Promise<void> {
    while (this.writing.size > 0) await Promise.allSettled([...this.writing.values()])
    while (this.durable < this.written && this.syncError == null) {
      if (this.fh == null) throw new Error('this staging log was closed before its blocks were flushed')
      if (this.flushStart < this.written || this.flushes.size === 0) this.flush()
      await Promise.all([...this.flushes])
    }
    if (this.syncError != null) throw this.syncError
  }

  /** Closes the file once every write is done (later puts fail; gets open the file again). */
  async close (): Promise<void> {
    while (this.writing.size > 0) await Promise.allSettled([...this.writing.values()])
    while (this.flushes.size > 0) await Promise.all([...this.flushes])
    const fh = this.fh
    this.fh = undefined
    await fh?.close()
  }

  private async append (name: string, cid: CID, bytes: Uint8Array): Promise<void> {
    if (this.syncError != null) throw this.syncError
    const fh = this.fh
    if (fh == null) throw new Error('this staging log is closed')
    const id = cid.bytes
    const header = Buffer.allocUnsafe(HEADER + id.byteLength)
    header.writeUInt32LE(MAGIC, 0)
    header.writeUInt16LE(id.byteLength, 4)
    header.writeUInt16LE(0, 6)
    header.writeUInt32LE(bytes.byteLength, 8)
    header.set(id, HEADER)
    const at = this.end
    this.end += header.byteLength + bytes.byteLength
    await writeFully(fh, [header, bytes], at)
    this.places.set(name, { cid, offset: at + header.byteLength, size: bytes.byteLength })
    this.written += header.byteLength + bytes.byteLength
    this.onWritten?.(cid, bytes.byteLength)
    this.flushBehind()
  }

  /** Starts an fdatasync covering every write completed so far. */
  private flush (): void {
    const fh = this.fh
    if (fh == null) return
    const covers = this.written
    this.flushStart = covers
    const flush: Promise<void> = fh.datasync().then(
      () => { this.durable = Math.max(this.durable, covers) },
      (err: unknown) => { this.syncError ??= err }
    ).finally(() => {
      this.flushes.delete(flush)
      this.flushBehind()
    })
    this.flushes.add(flush)
  }

  /** A background flush, when none is running and SYNC_EVERY bytes were written since the last one began. */
  private flushBehind (): void {
    if (this.flushes.size === 0 && this.syncError == null && this.written - this.flushStart >= SYNC_EVERY) this.flush()
  }
}

/** Writes every byte of `pieces` at `at` (a writev may write less than asked). */
async function writeFully (fh: FileHandle, pieces: Uint8Array[], at: number): Promise<void> {
  let rest = pieces
  while (rest.length > 0) {
    let n = (await fh.writev(rest, at)).bytesWritten
    at += n
    const left: Uint8Array[] = []
    for (const p of rest) {
      if (n >= p.byteLength) { n -= p.byteLength; continue }
      left.push(n > 0 ? p.subarray(n) : p)
      n = 0
    }
    rest = left
  }
}

/** Fills `buf` from `at`; a file that ends first is an error. */
export async function readFully (fh: FileHandle, buf: Uint8Array, at: number): Promise<void> {
  for (let got = 0; got < buf.byteLength;) {
    const { bytesRead } = await fh.read(buf, got, buf.byteLength - got, at + got)
    if (bytesRead === 0) throw new Error(`a staged file ended ${buf.byteLength - got} bytes short`)
    got += bytesRead
  }
}
