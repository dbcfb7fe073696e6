/**
 * Frees the memory behind a byte view at once, if the view is the whole of
 * its (non-shared) ArrayBuffer: `ArrayBuffer.prototype.transfer(0)` detaches
 * it and returns the memory without waiting for a garbage collection.
 *
 * Only for bytes the caller owns outright. node:http copies each read of a
 * request body into an ArrayBuffer of its own, so a body piece that nobody
 * else was handed qualifies; a view on a shared or pooled buffer never
 * spans all of it and is left alone.
 *
 * Why bother: V8 counts ArrayBuffer memory against the old generation, so
 * 100 MB of dead body pieces meant ~3 mark-compacts of the whole heap per
 * upload, and up to ~80 MB of them stayed resident until one ran.
 */
export function releaseBytes (view: Uint8Array): void {
  const ab = view.buffer
  if (ab instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === ab.byteLength && !ab.detached) ab.transfer(0)
}

/**
 * Buffers a reader was given for itself alone: a fresh read of a block file
 * (fs-backend.ts marks each piece blockstore-fs reads). Whoever ends up
 * with such a piece may free it once done with it (releaseHandedOver), and
 * a view of part of it frees the whole piece: nobody else has it.
 *
 * Why (issue 18): the gateway reads each block as sixteen 64 KiB pieces
 * that live until the response has written them. V8 frees an ArrayBuffer
 * only when a collection finds it dead, and it starts one for ArrayBuffer
 * memory only once ~64 MiB more of it is held than after the last one. In a
 * soak (16 + 8 clients) heap snapshots taken at ArrayBuffer peaks of 87 and
 * 89 MiB found 51 and 55 MiB alive, 34 of them fixed (the binary's archive,
 * lmdb's buffer), 9-11 idle chunk buffers and 6-8 MiB in flight: the
 * rest of each peak, over 30 MiB, was pieces already written out, waiting
 * for a collection.
 */
const handedOver = new WeakSet<ArrayBufferLike>()

/** Marks `view` (the whole of its buffer, or nothing is marked) as its receiver's alone. */
export function handOver<T extends Uint8Array> (view: T): T {
  const ab = view.buffer
  if (ab instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === ab.byteLength) handedOver.add(ab)
  return view
}

/** `view`'s buffer is kept (shared from now on): nobody frees it early. */
export function forgetHandedOver (view: Uint8Array): void {
  handedOver.delete(view.buffer)
}

/**
 * Frees the buffer behind `view` if it was handed over and `view` is the
 * whole of it; anything else is left alone (a part, say the edge of a byte
 * range, is left to the garbage collector: another part of the same piece
 * may still be on its way out). Only for the receiver, once neither it nor
 * any I/O it started still reads the bytes.
 */
export function releaseHandedOver (view: Uint8Array): void {
  const ab = view.buffer
  if (!handedOver.has(ab) || view.byteOffset !== 0 || view.byteLength !== ab.byteLength) return
  handedOver.delete(ab)
  releaseBytes(view)
}
