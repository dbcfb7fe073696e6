/**
 * Frees the memory behind byte views as soon as their owner is done with them
 * (`--runtime-release-buffers`, on by default), instead of waiting for a garbage collection to
 * find their ArrayBuffers dead: `ArrayBuffer.prototype.transfer(0)` detaches a buffer and returns
 * its memory at once. Why and what it is worth: docs/runtime.md, "Releasing buffers".
 *
 * Only for bytes the caller owns outright: a view that is the whole of a (non-shared)
 * ArrayBuffer nobody else was handed. node:http copies each read of a request body into an
 * ArrayBuffer of its own; the block stores mark each fresh block read as handed over
 * (`handOver`), and whoever ends up with it may free it once written (`releaseHandedOver`).
 */

let enabled = true

/** `--runtime-release-buffers`: when off, nothing is freed early and the collector does it all */
export function releaseBuffersEarly (on: boolean): void {
  enabled = on
}

/** Frees `view`'s buffer if `view` is the whole of it (twice is harmless; anything else is left alone). */
export function releaseBytes (view: Uint8Array): void {
  if (!enabled) return
  const ab = view.buffer
  if (ab instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === ab.byteLength && !ab.detached) ab.transfer(0)
}

/** Buffers a reader was given for itself alone (a fresh read of a block file or object). */
const handedOver = new WeakSet<ArrayBufferLike>()

/** Marks `view` (the whole of its buffer, or nothing is marked) as its receiver's alone. */
export function handOver<T extends Uint8Array> (view: T): T {
  const ab = view.buffer
  if (enabled && ab instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === ab.byteLength) handedOver.add(ab)
  return view
}

/** `view`'s buffer is kept (shared from now on): nobody frees it early. */
export function forgetHandedOver (view: Uint8Array): void {
  handedOver.delete(view.buffer)
}

/**
 * Frees the buffer behind `view` if it was handed over and `view` is the whole of it; a part
 * (the edge of a byte range, say) is left to the collector, since another part of the same piece
 * may still be on its way out. Only for the receiver, once neither it nor any I/O it started
 * still reads the bytes.
 */
export function releaseHandedOver (view: Uint8Array): void {
  const ab = view.buffer
  if (!handedOver.has(ab) || view.byteOffset !== 0 || view.byteLength !== ab.byteLength) return
  handedOver.delete(ab)
  releaseBytes(view)
}
