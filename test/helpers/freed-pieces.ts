/**
 * Looking at what the gateway frees (buffers.ts handOver, pump.ts
 * freeWritten) without a socket: a blockstore that keeps aside every piece it
 * hands out (freed ones are then detached), and pump writing into a sink that
 * copies each chunk and counts the ones that arrive already freed (empty).
 */
import type { ServerResponse } from 'node:http'
import { Writable } from 'node:stream'
import { pump } from '../../src/http/gateway/pump.js'
import type { LocalBlockstore } from '../../src/ipfs/content.js'

/** `inner`, with every piece it hands out kept aside to look at */
export function tapped (inner: LocalBlockstore): { store: LocalBlockstore, pieces: Uint8Array[] } {
  const pieces: Uint8Array[] = []
  return {
    pieces,
    store: {
      has: async (cid) => await inner.has(cid),
      get: async function * (cid, options) { for await (const p of inner.get(cid, options)) { pieces.push(p); yield p } }
    } as LocalBlockstore
  }
}

/** `source` through pump, freeing what is written (as the gateway does), into a sink that takes a turn per write: the bytes, and how many chunks were freed before their write */
export async function pumpFreeing (source: AsyncIterable<Uint8Array>): Promise<{ out: Buffer, freedBeforeWritten: number }> {
  const written: Buffer[] = []
  let freedBeforeWritten = 0
  const sink = new Writable({
    write (chunk: Buffer, _enc, cb) {
      if (chunk.byteLength === 0) freedBeforeWritten++
      written.push(Buffer.from(chunk))
      setImmediate(cb)
    }
  })
  const finished = new Promise(resolve => sink.once('finish', resolve))
  await pump(sink as unknown as ServerResponse, source, new AbortController().signal, { freeWritten: true })
  // the pump ends the sink with up to QUEUE_BYTES still queued: every write is done at 'finish'
  await finished
  return { out: Buffer.concat(written), freedBeforeWritten }
}
