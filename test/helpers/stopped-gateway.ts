/**
 * An S3 endpoint that stops answering: a radosgw of the run's Ceph cluster
 * (scripts/s3/ extraGateway) that only one test file uses, SIGSTOPped — its
 * sockets stay open and take requests, nothing is answered — and SIGCONTed.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { extraGateway, type Gateway } from '../../scripts/s3/index.mjs'
import { s3 } from './backend.js'

export interface StoppableGateway {
  endpoint: string
  /** SIGSTOP: requests are taken (by the kernel) and never answered */
  pause(): void
  /** SIGCONT (harmless when not paused) */
  resume(): void
  /** whether a request sent to it lies unread (in an accepted connection or its backlog) */
  unreadRequest(): boolean
  /** resumes it, then stops it by its recorded pid */
  stop(): Promise<void>
}

export async function stoppableGateway (name: string): Promise<StoppableGateway> {
  const gateway: Gateway = await extraGateway(s3().dir, name)
  const line = readFileSync(join(s3().dir, 'pids'), 'utf8').split('\n').find(l => l.endsWith(` rgw.${name}`))
  if (line == null) {
    await gateway.stop()
    throw new Error(`no pid recorded for rgw.${name}`)
  }
  const pid = Number(line.split(' ')[0])
  const port = Number(new URL(gateway.endpoint).port)
  let paused = false
  const resume = (): void => {
    if (!paused) return
    process.kill(pid, 'SIGCONT')
    paused = false
  }
  return {
    endpoint: gateway.endpoint,
    pause: () => { process.kill(pid, 'SIGSTOP'); paused = true },
    resume,
    unreadRequest: () => unreadAt(port),
    stop: async () => { resume(); await gateway.stop() }
  }
}

/** A connection to loopback `port` in state ESTABLISHED whose receive queue holds bytes (/proc/net/tcp). */
function unreadAt (port: number): boolean {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string
    try { text = readFileSync(file, 'utf8') } catch { continue }
    for (const line of text.split('\n').slice(1)) {
      // sl, local address, remote address, state, tx_queue:rx_queue, …
      const f = line.trim().split(/\s+/)
      if (f[1]?.endsWith(`:${hexPort}`) === true && f[3] === '01' && Number.parseInt(f[4]?.split(':')[1] ?? '0', 16) > 0) return true
    }
  }
  return false
}
