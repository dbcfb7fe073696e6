/**
 * Attacker tests for streamed responses (http/send-budget.ts, gateway/pump.ts):
 * clients that read slowly or not at all, over many connections, against a
 * real server, must not hold the process's memory, starve other readers, or
 * keep their responses open below the minimum send rate; and budget taken by
 * responses that end badly always comes back.
 */
import { randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { connect, type Socket } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PIECE_BYTES, QUEUE_BYTES } from '../../../src/http/gateway/pump.js'
import { configureSending, sending } from '../../../src/http/send-budget.js'
import { StreamSlots } from '../../../src/http/stream-slots.js'
import { importFile } from '../../../src/ipfs/import.js'
import { BLOCKSTORE } from '../../helpers/backend.js'
import { rawGet, serve, sha, useServed, type Served } from './helpers.js'

const s = useServed()
const MiB = 1024 * 1024

async function add (size: number): Promise<{ cid: string, bytes: Uint8Array }> {
  const bytes = randomBytes(size)
  const source = (async function * () { for (let at = 0; at < size; at += 65536) yield bytes.subarray(at, at + 65536) })()
  const { cid } = await importFile(source, { blockstore: s.fixture.fs, maxBytes: size })
  s.servable.add(cid.toString())
  return { cid: cid.toString(), bytes }
}

interface Reader { socket: Socket, received: () => number, closed: Promise<void>, isClosed: () => boolean }

/** A raw GET whose client reads through `onData` (pause the socket to stop reading). */
async function openRead (port: number, path: string, onConnect: (s: Socket) => void = () => {}): Promise<Reader> {
  return await new Promise((resolve, reject) => {
    let received = 0
    let closed = false
    const socket = connect({ port, host: '127.0.0.1' })
    const done = new Promise<void>(resolve => { socket.once('close', () => { closed = true; resolve() }) })
    socket.on('error', () => {})
    socket.on('data', (b: Buffer) => { received += b.byteLength })
    socket.once('connect', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`)
      onConnect(socket)
      resolve({ socket, received: () => received, closed: done, isClosed: () => closed })
    })
    socket.once('error', reject)
  })
}

/** A GET that hashes the body as it comes (keeps none of it) */
async function hashGet (url: string): Promise<{ status: number, complete: boolean, bytes: number, sha: string }> {
  const { request } = await import('node:http')
  const { createHash } = await import('node:crypto')
  return await new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      const h = createHash('sha256')
      let bytes = 0
      let complete = false
      res.on('data', (c: Buffer) => { bytes += c.byteLength; h.update(c) })
      res.on('end', () => { complete = res.complete })
      res.on('error', () => {})
      res.on('close', () => { resolve({ status: res.statusCode ?? 0, complete, bytes, sha: h.digest('hex') }) })
    })
    req.on('error', reject)
    req.end()
  })
}

/** waits for `cond`, polling every 20 ms, at most `ms` (a wide bound: what is awaited happens in a fraction of it) */
async function eventually (cond: () => boolean, ms: number): Promise<boolean> {
  const until = Date.now() + ms
  while (!cond()) {
    if (Date.now() > until) return false
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  return true
}

const readers: Reader[] = []
afterEach(async () => {
  for (const r of readers.splice(0)) r.socket.destroy()
  await s.tracker.settled()
  configureSending({ budgetBytes: 64 * MiB, minRate: 0, graceMs: 20_000 })
})
beforeAll(() => { configureSending({ minRate: 0 }) })

describe('many clients that stall their reads', () => {
  it('150 stalled readers of a 1 GiB file stay within the send budget, memory stays bounded, and another client reads a file byte for byte meanwhile', async () => {
    // room for every stalled response's queue (QUEUE_BYTES and the piece written past it): nobody is cut to make room
    const budget = 150 * (QUEUE_BYTES + PIECE_BYTES)
    configureSending({ budgetBytes: budget, minRate: 0 })
    const legit = await add(6 * MiB + 123)
    const before = process.memoryUsage().arrayBuffers
    let maxInUse = 0
    const sampler = setInterval(() => { maxInUse = Math.max(maxInUse, sending.budget.inUse) }, 5)
    try {
      const attack = 150
      for (let i = 0; i < attack; i++) readers.push(await openRead(s.port, `/ipfs/${s.fixture.huge.cid}`, (k) => { k.pause() }))
      // every response is under way, each soon stalled by its client (kernel buffers full, nothing read)
      expect(await eventually(() => s.server.inFlight() >= attack, 60_000)).toBe(true)
      const r = await hashGet(`${s.base}/ipfs/${legit.cid}`)
      expect(r).toEqual({ status: 200, complete: true, bytes: legit.bytes.byteLength, sha: sha(legit.bytes) })
      if (BLOCKSTORE !== 's3') {
        // the stalled readers give up their blocks (read from disk: freed at once, not at a
        // garbage collection); on the old code each held ~2 MiB (a block queued + the next), 300 MiB.
        // The margin: this process is the clients too (their sockets' read buffers), and the
        // read-ahead shared by all readers (8 blocks): 48-64 MiB here with a piece queued each
        // (16 MiB budget), 189 MiB on the old code
        const bounded = await eventually(() => process.memoryUsage().arrayBuffers - before < budget + 64 * MiB, 30_000)
        expect({ bounded, arrayBuffersMiB: Math.round((process.memoryUsage().arrayBuffers - before) / MiB) }).toEqual({ bounded: true, arrayBuffersMiB: expect.any(Number) })
        expect(sending.budget.inUse).toBeGreaterThanOrEqual(attack * PIECE_BYTES / 2) // what they hold is counted
      }
      expect(readers.filter(x => x.isClosed())).toEqual([]) // nobody was cut: the minimum rate is off here
    } finally {
      clearInterval(sampler)
    }
    expect(maxInUse).toBeLessThanOrEqual(budget)
    expect(sending.budget.inUse).toBeLessThanOrEqual(budget)
  })

  it('a budget spent by clients that take nothing: the one that has stalled longest is cut for a reader that needs budget, which gets its file byte for byte', async () => {
    const budget = 4 * MiB
    configureSending({ budgetBytes: budget, minRate: 0 })
    const legit = await add(3 * MiB + 77)
    const evictedBefore = sending.budget.evictions
    let maxInUse = 0
    const sampler = setInterval(() => { maxInUse = Math.max(maxInUse, sending.budget.inUse) }, 5)
    try {
      // far more than the budget holds: 40 responses of up to QUEUE_BYTES + a piece each
      for (let i = 0; i < 40; i++) readers.push(await openRead(s.port, `/ipfs/${s.fixture.huge.cid}`, (k) => { k.pause() }))
      expect(await eventually(() => sending.budget.inUse >= budget - QUEUE_BYTES - PIECE_BYTES, 60_000)).toBe(true)
      // without eviction this reader waits in line behind clients that never read: it never ends
      const r = await Promise.race([
        hashGet(`${s.base}/ipfs/${legit.cid}`),
        new Promise<'starved'>(resolve => setTimeout(() => { resolve('starved') }, 60_000).unref())
      ])
      expect(r).toEqual({ status: 200, complete: true, bytes: legit.bytes.byteLength, sha: sha(legit.bytes) })
      expect(sending.budget.evictions).toBeGreaterThan(evictedBefore)
      // those cut are stalled readers' responses (their paused clients see nothing until they read
      // again; the server's handlers end), and only as many as were needed: the others are still under way.
      // Attackers whose kernel buffers are not full yet still wait in line after the reader is done, and
      // go on cutting the longest stalled for themselves (seen in CI: 8 cut when the reader ended, 15 a
      // moment later): every handler that ended is one that was cut, counted as it is cut
      const cut = (): number => sending.budget.evictions - evictedBefore
      let seen = { ended: -1, cut: 0 }
      const settled = await eventually(() => {
        seen = { ended: 40 - s.server.inFlight(), cut: cut() }
        return seen.ended === seen.cut
      }, 10_000)
      expect({ settled, ...seen }).toEqual({ settled: true, ended: seen.cut, cut: seen.cut })
      expect(seen.cut).toBeLessThan(40)
    } finally {
      clearInterval(sampler)
    }
    expect(maxInUse).toBeLessThanOrEqual(budget)
  })

  it('a budget held by responses that wait in line with pieces their clients never take (never a drain wait): the one held up longest is cut for the line, and a reader gets its file byte for byte', async () => {
    // smaller than one response's drain queue: no response ever waits for a 'drain', each one whose
    // client takes nothing holds a piece or two and waits in line for the next (seen in CI with a 4 MiB
    // budget and 40 such readers, each caught below QUEUE_BYTES when the budget ran out)
    const budget = QUEUE_BYTES - 1
    configureSending({ budgetBytes: budget, minRate: 0 })
    const legit = await add(1 * MiB + 77)
    const evictedBefore = sending.budget.evictions
    const attack = 12
    for (let i = 0; i < attack; i++) readers.push(await openRead(s.port, `/ipfs/${s.fixture.huge.cid}`, (k) => { k.pause() }))
    // their kernels' buffers full: every budget holder is in line (it cannot take a piece more), with the rest
    expect(await eventually(() => sending.budget.waiting >= attack - 3 && sending.budget.inUse > budget - PIECE_BYTES, 60_000)).toBe(true)
    // on the old code nobody here was evictable (only responses waiting for 'drain' were): the reader waited for ever
    const r = await Promise.race([
      hashGet(`${s.base}/ipfs/${legit.cid}`),
      new Promise<'starved'>(resolve => setTimeout(() => { resolve('starved') }, 60_000).unref())
    ])
    expect(r).toEqual({ status: 200, complete: true, bytes: legit.bytes.byteLength, sha: sha(legit.bytes) })
    expect(sending.budget.evictions).toBeGreaterThan(evictedBefore)
  })

  it('a budget smaller than what the readers want: they wait for it (counted) instead of allocating, and go on when it comes back', async () => {
    const budget = 1 * MiB
    configureSending({ budgetBytes: budget, minRate: 0 })
    const waitsBefore = sending.budget.waits
    let maxInUse = 0
    const sampler = setInterval(() => { maxInUse = Math.max(maxInUse, sending.budget.inUse) }, 5)
    try {
      for (let i = 0; i < 40; i++) readers.push(await openRead(s.port, `/ipfs/${s.fixture.huge.cid}`, (k) => { k.pause() }))
      expect(await eventually(() => sending.budget.waits > waitsBefore, 60_000)).toBe(true)
      expect(sending.budget.inUse).toBeLessThanOrEqual(budget)
      // the stalled ones go away: the waiting ones get the budget and a new reader gets its file
      for (const r of readers.splice(0, 40)) r.socket.destroy()
      const r = await rawGet(`${s.base}/ipfs/${s.fixture.big.cid}`)
      expect(r.complete && sha(r.body) === sha(s.fixture.big.bytes)).toBe(true)
    } finally {
      clearInterval(sampler)
    }
    expect(maxInUse).toBeLessThanOrEqual(budget)
  })
})

describe('a reader held up past the stall', () => {
  it('frees the rest of its leaf and reads it again when its client goes on: every byte right, whole files and ranges', async () => {
    configureSending({ budgetBytes: 64 * MiB, minRate: 0 })
    const f = await add(12 * MiB + 4321)
    for (const range of [undefined, [MiB / 2 + 17, 9 * MiB + 5] as [number, number]]) {
      const want = range == null ? f.bytes : f.bytes.subarray(range[0], range[1] + 1)
      // the blocks the same request reads when its client keeps up
      let before = s.fixture.store.reads
      const control = await pausedRead(`/ipfs/${f.cid}`, range, [])
      control.socket.resume()
      await control.closed
      const unstalled = s.fixture.store.reads - before
      before = s.fixture.store.reads
      const chunks: Buffer[] = []
      const r = await pausedRead(`/ipfs/${f.cid}`, range, chunks)
      readers.push(r)
      // stalled: the server waits for this client longer than STALL_MS (2 s), so the read gives up its leaf
      await new Promise(resolve => setTimeout(resolve, 3000))
      const whileStalled = s.fixture.store.reads
      r.socket.resume()
      await r.closed // connection: close, once the whole body is out
      const all = Buffer.concat(chunks)
      const body = all.subarray(all.indexOf('\r\n\r\n') + 4)
      expect(body.byteLength).toBe(want.byteLength)
      expect(sha(body)).toBe(sha(want))
      // the leaf it stopped in was read again once it went on
      expect(s.fixture.store.reads).toBeGreaterThan(whileStalled)
      expect(s.fixture.store.reads - before).toBeGreaterThanOrEqual(unstalled + 1)
    }
  })
})

describe('a raw block (?format=raw) held up past the stall', () => {
  it('frees the block and reads it again when its client goes on, as a file\'s leaf: every byte right, whole and a range', async () => {
    configureSending({ budgetBytes: 64 * MiB, minRate: 0 })
    // the largest block a gateway response reads (MAX_BLOCK_BYTES): more than the sockets between here and a paused client take
    const bytes = randomBytes(8 * MiB)
    const cid = CID.createV1(raw.code, await sha256.digest(bytes))
    await s.fixture.fs.put(cid, bytes)
    s.servable.add(cid.toString())
    for (const range of [undefined, [MiB + 5, 7 * MiB] as [number, number]]) {
      const want = range == null ? bytes : bytes.subarray(range[0], range[1] + 1)
      const before = s.fixture.store.reads
      const chunks: Buffer[] = []
      const r = await pausedRead(`/ipfs/${cid}?format=raw`, range, chunks)
      readers.push(r)
      // stalled: the server waits for this client longer than STALL_MS (2 s), so the response gives up the block
      await new Promise(resolve => setTimeout(resolve, 3000))
      const whileStalled = s.fixture.store.reads
      r.socket.resume()
      await r.closed
      const all = Buffer.concat(chunks)
      const body = all.subarray(all.indexOf('\r\n\r\n') + 4)
      expect(all.subarray(0, 12).toString()).toBe(range == null ? 'HTTP/1.1 200' : 'HTTP/1.1 206')
      expect(body.byteLength).toBe(want.byteLength)
      expect(sha(body)).toBe(sha(want))
      // read once before the stall, and again once its client went on (before: held whole all along, read once)
      expect({ beforeStall: whileStalled - before, after: s.fixture.store.reads - whileStalled }).toEqual({ beforeStall: 1, after: 1 })
    }
  })
})

describe('a CAR response held up past the stall', () => {
  it('frees the raw leaf it is in and reads it again when its client goes on, as a file read does: the same CAR, byte for byte', async () => {
    configureSending({ budgetBytes: 64 * MiB, minRate: 0 })
    const f = await add(12 * MiB + 4321)
    for (const query of ['format=car', 'format=car&dag-scope=entity']) {
      // the CAR and the blocks it reads when its client keeps up
      let before = s.fixture.store.reads
      const control = await rawGet(`${s.base}/ipfs/${f.cid}?${query}`)
      expect(control.status).toBe(200)
      const unstalled = s.fixture.store.reads - before
      before = s.fixture.store.reads
      const r = await pausedGet(`${s.base}/ipfs/${f.cid}?${query}`)
      // stalled: the server waits for this client longer than STALL_MS (2 s), so the response gives up its leaf
      await new Promise(resolve => setTimeout(resolve, 3000))
      r.resume()
      const { body, complete } = await r.done
      expect(complete).toBe(true)
      expect(sha(body)).toBe(sha(control.body))
      // the leaf it stopped in was read again (before: held whole, and as many reads as unstalled)
      expect(s.fixture.store.reads - before, query).toBe(unstalled + 1)
    }
  })
})

/** a GET whose client reads nothing until resume() */
async function pausedGet (url: string): Promise<{ resume: () => void, done: Promise<{ body: Buffer, complete: boolean }> }> {
  const { request } = await import('node:http')
  return await new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      res.pause()
      const chunks: Buffer[] = []
      const done = new Promise<{ body: Buffer, complete: boolean }>(resolve => {
        res.on('data', (c: Buffer) => { chunks.push(c) })
        res.on('error', () => {})
        res.on('close', () => { resolve({ body: Buffer.concat(chunks), complete: res.complete }) })
      })
      resolve({ resume: () => { res.resume() }, done })
    })
    req.on('error', reject)
    req.end()
  })
}

/** a raw GET (of `range`, if given) whose client starts paused; the server closes after the response (connection: close) */
async function pausedRead (path: string, range: [number, number] | undefined, chunks: Buffer[]): Promise<Reader> {
  return await new Promise((resolve, reject) => {
    let closed = false
    const socket = connect({ port: s.port, host: '127.0.0.1' })
    const done = new Promise<void>(resolve => { socket.once('close', () => { closed = true; resolve() }) })
    socket.on('error', () => {})
    socket.on('data', (b: Buffer) => { chunks.push(b) })
    socket.once('connect', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\n${range != null ? `range: bytes=${range[0]}-${range[1]}\r\n` : ''}connection: close\r\n\r\n`)
      socket.pause()
      resolve({ socket, received: () => chunks.reduce((n, b) => n + b.byteLength, 0), closed: done, isClosed: () => closed })
    })
    socket.once('error', reject)
  })
}

describe('the minimum send rate', () => {
  it('a client that trickles below the rate is cut after the grace period; one above it is not and gets every byte', async () => {
    configureSending({ budgetBytes: 64 * MiB, minRate: 100 * 1024, graceMs: 2000 })
    const f = await add(24 * MiB)
    const cutBefore = sending.budget.slowCuts
    // 4 KiB every 200 ms (20 KiB/s): below 100 KiB/s
    const trickler = await openRead(s.port, `/ipfs/${s.fixture.huge.cid}`, (k) => {
      k.pause()
      const timer = setInterval(() => { k.read(4096) }, 200)
      k.once('close', () => { clearInterval(timer) })
    })
    readers.push(trickler)
    // a client that takes 64 KiB every 10 ms or so (several MB/s): well above the rate
    let got = 0
    const hash = (await import('node:crypto')).createHash('sha256')
    let head = Buffer.alloc(0)
    let inBody = false
    const good = await openRead(s.port, `/ipfs/${f.cid}`, (k) => {
      k.removeAllListeners('data')
      k.pause()
      const timer = setInterval(() => {
        const b = k.read() as Buffer | null
        if (b == null) return
        if (!inBody) {
          head = Buffer.concat([head, b])
          const at = head.indexOf('\r\n\r\n')
          if (at < 0) return
          inBody = true
          const body = head.subarray(at + 4)
          got += body.byteLength
          hash.update(body)
          return
        }
        got += b.byteLength
        hash.update(b)
      }, 10)
      k.once('close', () => { clearInterval(timer) })
    })
    readers.push(good)
    // the server cuts it (the client sees it only once it has read what its kernel holds, minutes at its pace)
    expect(await eventually(() => sending.budget.slowCuts > cutBefore, 60_000)).toBe(true)
    expect(await eventually(() => got >= f.bytes.byteLength, 120_000)).toBe(true)
    expect(good.isClosed()).toBe(false)
    expect(got).toBe(f.bytes.byteLength)
    expect(hash.digest('hex')).toBe(sha(f.bytes))
    // the one cut was the trickler's (1 GiB: it cannot have ended otherwise); the good one was not cut
    expect(sending.budget.slowCuts).toBe(cutBefore + 1)
    await s.tracker.settled()
    expect(s.server.inFlight()).toBe(0)
    expect(trickler.received()).toBeLessThan(64 * MiB)
  })
})

describe('budget accounting', () => {
  it('a storm of aborted reads, and reads that fail mid-stream, give back every byte of budget', async () => {
    configureSending({ budgetBytes: 8 * MiB, minRate: 0 })
    // readers that take a little and go away at once, mid-block, while others are stalled
    for (let i = 0; i < 60; i++) {
      const r = await openRead(s.port, `/ipfs/${s.fixture.huge.cid}`, (k) => { if (i % 2 === 0) k.pause() })
      readers.push(r)
    }
    expect(await eventually(() => sending.budget.inUse > 0, 60_000)).toBe(true)
    for (const r of readers.splice(0)) r.socket.destroy()
    // reads that fail mid-stream (a leaf is missing: the server cuts the response)
    const failed = await Promise.all(Array.from({ length: 10 }, async () => await rawGet(`${s.base}/ipfs/${s.fixture.broken.cid}`)))
    expect(failed.every(r => r.status === 200 && !r.complete)).toBe(true)
    const cars = await Promise.all(Array.from({ length: 10 }, async () => await rawGet(`${s.base}/ipfs/${s.fixture.broken.cid}?format=car`)))
    expect(cars.every(r => !r.complete)).toBe(true)
    await s.tracker.settled()
    expect(await eventually(() => sending.budget.inUse === 0, 30_000)).toBe(true)
    expect(sending.budget.inUse).toBe(0)
  })
})

describe('streamed responses per client', () => {
  let capped: Served
  beforeAll(async () => { capped = await serve({ streams: { slots: new StreamSlots(4), clientOf: () => 'one-client' } }, s.fixture) })
  afterAll(async () => { await capped.close() })

  it('past the cap a client is answered 429 in the error shape, with Retry-After; once one ends it may read again', async () => {
    configureSending({ minRate: 0 })
    const port = capped.port
    const held: Reader[] = []
    for (let i = 0; i < 4; i++) held.push(await openRead(port, `/ipfs/${capped.fixture.huge.cid}`, (k) => { k.pause() }))
    readers.push(...held)
    expect(await eventually(() => capped.server.inFlight() === 4, 30_000)).toBe(true)
    const refused = await rawGet(`${capped.base}/ipfs/${capped.fixture.rawLeaf.cid}`)
    expect(refused.status).toBe(429)
    expect(refused.headers['retry-after']).toBeDefined()
    expect(JSON.parse(Buffer.from(refused.body).toString())).toEqual({ error: { reason: 'TOO_MANY_REQUESTS', details: expect.stringContaining('4 gateway responses') } })
    held[0]?.socket.destroy()
    expect(await eventually(() => capped.server.inFlight() === 3, 30_000)).toBe(true)
    const again = await rawGet(`${capped.base}/ipfs/${capped.fixture.rawLeaf.cid}`)
    expect(again.status).toBe(200)
  })
})
