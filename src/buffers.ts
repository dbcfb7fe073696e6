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
