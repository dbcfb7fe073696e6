/**
 * What a hostile client uses against the real server: raw TCP sockets that
 * send nothing or dribble a request head, and HTTP requests from chosen
 * loopback source addresses (on Linux every 127.x.y.z is the loopback, so
 * each one is a distinct client to pind's per-address limits).
 */
import { chmodSync, readdirSync, writeFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { tempDir } from './pind.js'

export interface RawSocket {
  socket: Socket
  /** ms from connect until the server closed it (resolves when it does) */
  closed: Promise<number>
  /** everything the server sent */
  received(): string
}

/** Opens `n` TCP connections to 127.0.0.1:port (from `localAddress`), each running `onConnect` once connected. */
export async function openSockets (port: number, n: number, opts: { localAddress?: string, onConnect?: (s: Socket) => void } = {}): Promise<RawSocket[]> {
  const opened: Array<Promise<RawSocket>> = []
  for (let i = 0; i < n; i++) {
    opened.push(new Promise((resolve, reject) => {
      const t0 = Date.now()
      let data = ''
      const socket = connect({ port, host: '127.0.0.1', ...(opts.localAddress != null ? { localAddress: opts.localAddress } : {}) })
      const closed = new Promise<number>(resolve => { socket.once('close', () => { resolve(Date.now() - t0) }) })
      socket.on('data', (b: Buffer) => { data += b.toString() })
      socket.on('error', (err) => { if (!socket.readyState.startsWith('open')) reject(err) })
      socket.once('connect', () => {
        opts.onConnect?.(socket)
        resolve({ socket, closed, received: () => data })
      })
    }))
  }
  return await Promise.all(opened)
}

/** Writes a request head one header line at a time, every `everyMs`, never finishing it. */
export function dribbleHead (s: Socket, everyMs: number): void {
  s.write('GET /health HTTP/1.1\r\nhost: x\r\n')
  const timer = setInterval(() => { if (s.writable) s.write(`x-slow-${Date.now()}: 1\r\n`) }, everyMs)
  s.once('close', () => { clearInterval(timer) })
}

/** Sockets of this process (the attacker's side) that are still open. */
export function stillOpen (sockets: RawSocket[]): number {
  return sockets.filter(s => !s.socket.destroyed && s.socket.readyState !== 'closed').length
}

export interface ClientAt {
  request(url: string, opts?: Parameters<typeof request>[1]): ReturnType<typeof request>
  /** the same client as a fetch (e.g. under @x402/fetch) */
  fetch: typeof fetch
  close(): Promise<void>
}

/** An HTTP client whose connections come from `localAddress`. */
export function clientAt (localAddress: string, connections = 8): ClientAt {
  const dispatcher = new Agent({ localAddress, connections })
  const send: ClientAt['request'] = async (url, opts) => await request(url, { ...opts, dispatcher })
  return {
    request: send,
    fetch: async (input, init) => {
      const req = new Request(input, init)
      const body = req.body != null ? Buffer.from(await req.arrayBuffer()) : undefined
      const r = await send(req.url, { method: req.method as 'GET', headers: Object.fromEntries(req.headers), ...(body != null ? { body } : {}) })
      const headers = new Headers()
      for (const [k, v] of Object.entries(r.headers)) for (const x of Array.isArray(v) ? v : v != null ? [v] : []) headers.append(k, x)
      const bytes = await r.body.arrayBuffer()
      return new Response([101, 204, 205, 304].includes(r.statusCode) ? null : bytes, { status: r.statusCode, headers })
    },
    close: async () => { await dispatcher.close() }
  }
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` at once. */
export async function inParallel<T> (n: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, async () => {
    while (next < n) {
      const i = next++
      out[i] = await task(i)
    }
  }))
  return out
}

/**
 * An executable shell script that runs `prelude` (e.g. `ulimit -n 1024`,
 * `umask 022`) and then execs `command` with the script's arguments: the
 * server runs under those limits, with the script's pid.
 */
export function shellWrapper (prelude: string, command: string[]): string {
  const file = join(tempDir('pind-wrap-'), 'run.sh')
  const quoted = command.map(c => `'${c.replace(/'/g, `'\\''`)}'`).join(' ')
  writeFileSync(file, `#!/bin/sh\n${prelude}\nexec ${quoted} "$@"\n`)
  chmodSync(file, 0o755)
  return file
}

/** File descriptors a process holds (Linux). */
export function openFds (pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length
}
