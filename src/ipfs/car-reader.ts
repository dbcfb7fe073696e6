/**
 * The CAR decoder's source of bytes (@ipld/car's BytesReader) over an
 * upload's body pieces. The package's own reader concatenates pieces into a
 * fresh buffer whenever a section spans them: a megabyte-sized allocation per
 * block, each holding the ends of its neighbours, left for the collector
 * (which V8 starts for such memory only after ~64 MiB of it). Here each
 * large read, a block's bytes, is copied once into a buffer of its own from
 * `blockBuffer` (the import's chunk pool: the staging gives it back once the
 * block is written, as it does the file path's chunks). Small reads (varints,
 * CIDs, the header, small blocks) are views of a piece, or small copies when
 * they span two. `ownsInput` (the upload's body, which nothing else holds):
 * a piece read past, none of it handed out as a view, is freed at once
 * (releaseBytes), as the file path's chunker frees what it copied.
 */
import type { asyncIterableReader } from '@ipld/car/decoder'
import { releaseBytes } from '../runtime/buffers.js'

/** @ipld/car's BytesReader (the decoder's source) */
export type BytesReader = ReturnType<typeof asyncIterableReader>

/** reads at least this long get a buffer of their own from `blockBuffer` */
export const OWN_BUFFER_BYTES = 64 * 1024

export function carReader (source: AsyncIterable<Uint8Array>, blockBuffer: (size: number) => Uint8Array = (n) => new Uint8Array(n), ownsInput = false): BytesReader {
  const it = source[Symbol.asyncIterator]()
  /** pieces holding the bytes from `pos` on: pieces[head] from `first` (a body may come in pieces of a byte) */
  let pieces: Uint8Array[] = []
  let head = 0
  let first = 0
  /** pieces part of which was handed out as a view: never freed here */
  const viewed = new Set<Uint8Array>()
  let buffered = 0
  let pos = 0
  /** bytes a seek went past that have not arrived yet: dropped as they do */
  let skip = 0
  let ended = false

  const fill = async (n: number): Promise<void> => {
    while (buffered < n && !ended) {
      const next = await it.next()
      if (next.done === true) {
        ended = true
        break
      }
      let piece = next.value
      if (skip > 0) {
        const k = Math.min(skip, piece.byteLength)
        skip -= k
        piece = piece.subarray(k)
      }
      if (piece.byteLength === 0) continue
      pieces.push(piece)
      buffered += piece.byteLength
    }
  }

  /** the next n buffered bytes: a view when one piece holds them (and `into` is not given), else copied */
  const take = (n: number, into?: Uint8Array): Uint8Array => {
    const p0 = pieces[head] as Uint8Array
    if (into == null && p0.byteLength - first >= n) {
      viewed.add(p0)
      return p0.subarray(first, first + n)
    }
    const out = into ?? new Uint8Array(n)
    let at = 0
    let off = first
    for (let i = head; at < n; i++, off = 0) {
      const p = pieces[i] as Uint8Array
      const k = Math.min(n - at, p.byteLength - off)
      out.set(p.subarray(off, off + k), at)
      at += k
    }
    return out
  }

  const advance = (n: number): void => {
    pos += n
    if (n > buffered) {
      skip += n - buffered
      n = buffered
    }
    buffered -= n
    while (n > 0) {
      const avail = (pieces[head] as Uint8Array).byteLength - first
      if (n >= avail) {
        const done = pieces[head] as Uint8Array
        if (!viewed.delete(done) && ownsInput) releaseBytes(done)
        head++
        first = 0
        n -= avail
      } else {
        first += n
        n = 0
      }
    }
    // the pieces read are dropped in one go once they are most of the list (not one shift each: quadratic)
    if (head > 64 && head * 2 > pieces.length) {
      pieces = pieces.slice(head)
      head = 0
    }
  }

  return {
    async upTo (length: number): Promise<Uint8Array> {
      await fill(length)
      const n = Math.min(length, buffered)
      return n === 0 ? new Uint8Array(0) : take(n)
    },
    async exactly (length: number, seek = false): Promise<Uint8Array> {
      await fill(length)
      if (buffered < length) throw new Error('Unexpected end of data')
      const out = length === 0 ? new Uint8Array(0) : take(length, length >= OWN_BUFFER_BYTES ? blockBuffer(length) : undefined)
      if (seek) advance(length)
      return out
    },
    seek (length: number): void {
      advance(length)
    },
    get pos (): number {
      return pos
    }
  }
}
