import { request } from 'node:http'
import { Writable } from 'node:stream'
import type { ServerResponse } from 'node:http'
import { describe, expect, it } from 'vitest'
import { loadEntry, readFile } from '../../../src/ipfs/content.js'
import { PIECE_BYTES, pump, QUEUE_BYTES } from '../../../src/http/gateway/pump.js'
import * as dagPb from '@ipld/dag-pb'
import type { CID } from 'multiformats/cid'
import { collect, useServed, sha } from './helpers.js'

const s = useServed()

/** GETs `path` and destroys the connection as soon as the first body bytes arrive. */
async function abortAfterFirstBytes (path: string): Promise<{ status: number, received: number }> {
  return await new Promise((resolve, reject) => {
    const req = request(`${s.base}${path}`, { agent: false }, (res) => {
      res.once('data', (chunk: Buffer) => {
        req.destroy()
        resolve({ status: res.statusCode ?? 0, received: chunk.byteLength })
      })
      res.on('error', () => {})
    })
    req.on('error', (err) => { if (!req.destroyed) reject(err) })
    req.end()
  })
}

const flush = async (): Promise<void> => { await new Promise(resolve => setImmediate(resolve)) }

describe('client disconnects', () => {
  it('mid-stream of a 1 GiB file: the handler ends, nothing stays open, few blocks were read', async () => {
    const store = s.fixture.store
    const before = store.reads
    const { status, received } = await abortAfterFirstBytes(`/ipfs/${s.fixture.huge.cid}`)
    expect(status).toBe(200)
    expect(received).toBeGreaterThan(0)
    await s.tracker.settled()
    expect(s.tracker.finished.at(-1)).toBe(false) // the response was cut, not completed
    expect(store.open).toBe(0)
    const readsForAbort = store.reads - before
    expect(readsForAbort).toBeLessThan(64) // of 1024 leaf reads a full download needs
    // no reads trail in after the handler ended
    const after = store.reads
    const ok = await fetch(`${s.base}/ipfs/${s.fixture.root}/hello.txt`)
    expect(await ok.text()).toBe('hello world\n')
    await s.tracker.settled()
    expect(store.reads - after).toBeLessThan(5)
    expect(store.open).toBe(0)
  })

  it('mid-stream of a 1 GiB CAR (dups=y), and of a ranged read', async () => {
    const store = s.fixture.store
    for (const path of [
      `/ipfs/${s.fixture.huge.cid}?format=car&car-dups=y`,
      `/ipfs/${s.fixture.huge.cid}?entity-bytes=0:*&format=car&car-dups=y&dag-scope=entity`
    ]) {
      const before = store.reads
      const { status } = await abortAfterFirstBytes(path)
      expect(status).toBe(200)
      await s.tracker.settled()
      expect(s.tracker.finished.at(-1), path).toBe(false)
      expect(store.open).toBe(0)
      expect(store.reads - before).toBeLessThan(64)
    }
    const ranged = await new Promise<number>((resolve) => {
      const req = request(`${s.base}/ipfs/${s.fixture.huge.cid}`, { agent: false, headers: { range: 'bytes=500000000-' } }, (res) => {
        res.once('data', () => { req.destroy(); resolve(res.statusCode ?? 0) })
        res.on('error', () => {})
      })
      req.on('error', () => {})
      req.end()
    })
    expect(ranged).toBe(206)
    await s.tracker.settled()
    expect(store.open).toBe(0)
  })

  it('the server stays healthy: a full download after the aborts is byte-exact', async () => {
    const r = await fetch(`${s.base}/ipfs/${s.fixture.big.cid}`)
    expect(sha(new Uint8Array(await r.arrayBuffer()))).toBe(sha(s.fixture.big.bytes))
    await s.tracker.settled()
    expect(s.fixture.store.open).toBe(0)
  })
})

describe('backpressure and bounded reads', () => {
  it('pump queues QUEUE_BYTES, then pulls only after the writer drains, and closes the source on abort', async () => {
    const held: Array<(err?: Error | null) => void> = []
    const sink = new Writable({
      highWaterMark: 1024,
      write (_chunk, _enc, cb) { held.push(cb) }
    })
    let pulled = 0
    let closed = false
    const source = (async function * () {
      try {
        for (let i = 0; i < 100; i++) {
          pulled++
          yield new Uint8Array(64 * 1024)
        }
      } finally {
        closed = true
      }
    })()
    const controller = new AbortController()
    const done = pump(sink as unknown as ServerResponse, source, controller.signal)
    // QUEUE_BYTES (four pieces of PIECE_BYTES, the size of the pieces a block is read in) are queued, then pump waits for 'drain'
    const perQueue = QUEUE_BYTES / (64 * 1024)
    expect(perQueue).toBe(4 * PIECE_BYTES / (64 * 1024))
    await flush()
    expect(pulled).toBe(perQueue)
    for (let i = 0; i < perQueue - 1; i++) { held.shift()?.(); await flush() }
    expect(pulled).toBe(perQueue) // not drained yet: one piece still queued
    held.shift()?.()
    await flush()
    expect(pulled).toBe(2 * perQueue) // drained: the next queue's worth
    controller.abort() // the client went away while we wait for drain
    await done
    expect(closed).toBe(true)
    expect(pulled).toBe(2 * perQueue)
  })

  it('readFile reads blocks as they are consumed (bounded read-ahead), and return() releases everything', async () => {
    const store = s.fixture.store
    await s.tracker.settled()
    const entry = await loadEntry(store, s.fixture.huge.cid)
    if (entry.kind !== 'file') throw new Error('not a file')
    const before = store.reads
    // the window: 2 blocks, or what the store asks for (S3: a GET is a round trip)
    const window = store.readAhead ?? 2
    const it = readFile(store, entry)
    await it.next()
    expect(store.reads - before).toBeLessThanOrEqual(1 + window) // first leaf + read-ahead window
    for (let i = 0; i < 9; i++) await it.next()
    expect(store.reads - before).toBeLessThanOrEqual(10 + window)
    await it.return(undefined)
    expect(store.open).toBe(0)
    const afterReturn = store.reads
    await flush()
    expect(store.reads).toBe(afterReturn)
  })

  it('an aborted signal stops readFile between blocks', async () => {
    const store = s.fixture.store
    const entry = await loadEntry(store, s.fixture.huge.cid)
    if (entry.kind !== 'file') throw new Error('not a file')
    const controller = new AbortController()
    const it = readFile(store, entry, { offset: 0n }, { signal: controller.signal })
    await it.next()
    const reads = store.reads
    controller.abort()
    // a block may come in several pieces (yielded as they are): read on until the next block
    await expect((async () => { for (;;) { if ((await it.next()).done === true) return } })()).rejects.toThrow()
    expect(store.reads - reads).toBeLessThanOrEqual(1)
    expect(store.open).toBe(0)
  })
})

describe('reads of a whole file', () => {
  it('read each block of the file once: the type is sniffed from the body, not from a read of its own', async () => {
    const store = s.fixture.store
    await s.tracker.settled()
    // the file's blocks, counted past the gateway
    let blocks = 0
    const walk = async (cid: CID): Promise<void> => {
      blocks++
      if (cid.code !== dagPb.code) return
      for (const link of dagPb.decode(await collect(store.inner.get(cid))).Links) await walk(link.Hash)
    }
    await walk(s.fixture.big.cid)
    expect(blocks).toBeGreaterThan(300)
    const before = store.reads
    const r = await fetch(`${s.base}/ipfs/${s.fixture.big.cid}`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('application/octet-stream')
    expect(sha(new Uint8Array(await r.arrayBuffer()))).toBe(sha(s.fixture.big.bytes))
    await s.tracker.settled()
    expect(store.reads - before).toBe(blocks)
    // a range from the start: the blocks it covers, once each (root, first inner node, first leaf)
    const ranged = store.reads
    const g = await fetch(`${s.base}/ipfs/${s.fixture.big.cid}`, { headers: { range: 'bytes=0-99' } })
    expect(g.status).toBe(206)
    expect(Buffer.from(await g.arrayBuffer()).equals(Buffer.from(s.fixture.big.bytes.subarray(0, 100)))).toBe(true)
    await s.tracker.settled()
    expect(store.reads - ranged).toBe(3)
  })
})
