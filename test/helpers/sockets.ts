/**
 * What a process does on the network, read from /proc: its TCP sockets, and
 * which of them are connections it opened (outbound) rather than accepted.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

interface TcpRow { local: string, localPort: number, remote: string, state: string, inode: string }

function rows (file: string): TcpRow[] {
  let text: string
  try { text = readFileSync(file, 'utf8') } catch { return [] }
  return text.trim().split('\n').slice(1).map(line => {
    const f = line.trim().split(/\s+/)
    const [local = '', localPort = '0'] = (f[1] ?? '').split(':')
    return { local, localPort: parseInt(localPort, 16), remote: f[2] ?? '', state: f[3] ?? '', inode: f[9] ?? '' }
  })
}

/** TCP connections of `pid` that it opened itself: established (or being set up) from a port it does not listen on. */
export function outboundConnections (pid: number): string[] {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (m != null) inodes.add(m[1] as string)
    } catch {}
  }
  const mine = [...rows(`/proc/${pid}/net/tcp`), ...rows(`/proc/${pid}/net/tcp6`)].filter(r => inodes.has(r.inode))
  const LISTEN = '0A'
  const listening = new Set(mine.filter(r => r.state === LISTEN).map(r => r.localPort))
  return mine.filter(r => r.state !== LISTEN && !listening.has(r.localPort)).map(r => `${r.local}:${r.localPort} -> ${r.remote} (state ${r.state})`)
}

/** Samples outboundConnections(pid) every `everyMs` until stopped; returns every distinct one seen. */
export function watchOutbound (pid: number, everyMs = 25): { stop(): string[] } {
  const seen = new Set<string>()
  const sample = (): void => {
    try { for (const c of outboundConnections(pid)) seen.add(c) } catch {}
  }
  sample()
  const t = setInterval(sample, everyMs)
  return { stop: () => { clearInterval(t); sample(); return [...seen] } }
}
