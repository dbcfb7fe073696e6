/**
 * A real browser for tests: Debian's chromium (/usr/bin/chromium, `apt-get install chromium`;
 * CI installs it in .ci/run) driven by playwright-core. Playwright's own browser download is
 * never used.
 *
 * Nothing it does may leave loopback, and that is enforced in two layers, not hoped for:
 * - names: `--host-resolver-rules` resolves every host name to NOTFOUND except localhost,
 *   *.localhost (Chromium answers those with loopback itself, no DNS) and 127.0.0.1;
 * - connections: every request Chromium does not already keep on loopback (its implicit
 *   proxy bypass covers localhost, *.localhost, 127.0.0.0/8 and [::1]) goes to a sink
 *   proxy on 127.0.0.1 that answers 502, forwards nothing, and records what was asked
 *   (`offLoopback()`), so a test sees any attempt to reach out.
 * Playwright's defaults already turn off background networking, component updates, sync,
 * first-run and the default apps; QUIC is off here as well (UDP would not go through the
 * proxy). Even so, this Chromium (156, Debian) still asks for update.googleapis.com (one
 * on-demand component update check) and accounts.google.com at start-up, whatever
 * features are disabled: the sink catches both, and they reach nothing.
 *
 * Teardown: `close()` closes the browser through Playwright; if that has not finished
 * within CLOSE_WAIT_MS it SIGKILLs the browser's process group by the browser's pid (found
 * by a marker switch unique to this launch) and waits until every process of it is gone.
 * A test process that exits early kills them too.
 */
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { chromium, type Browser } from 'playwright-core'
import { waitFor } from './ports.js'

export const CHROMIUM = '/usr/bin/chromium'

/** how long a graceful close may take before the browser is killed by pid (teardown, not an assertion) */
const CLOSE_WAIT_MS = 10_000

export interface TestBrowser {
  browser: Browser
  /** the browser process's pid (the /usr/bin/chromium wrapper execs the binary: same pid) */
  pid: number
  /** every request that tried to leave loopback (caught by the sink, never forwarded): "METHOD url" or "CONNECT host:port" */
  offLoopback(): string[]
  /** pids of the browser's processes still alive (its process group) */
  processes(): number[]
  /** closes the browser (kills its processes by pid if closing hangs) and the sink */
  close(): Promise<void>
}

/** pids whose process group is `pgid`, read from /proc (field 5 of stat, after the command name) */
function groupMembers (pgid: number): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      // a zombie already exited: it only waits for its parent to reap it
      if (fields[0] !== 'Z' && Number(fields[2]) === pgid) pids.push(Number(entry))
    } catch {}
  }
  return pids
}

/** the pid of the process whose command line carries `marker` (the browser itself, not its helpers: they do not get unknown switches) */
function pidWithArg (marker: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(marker)) return Number(entry)
    } catch {}
  }
  return undefined
}

const launched = new Set<number>()
process.on('exit', () => {
  for (const pid of launched) {
    try { process.kill(-pid, 'SIGKILL') } catch {}
  }
})

/** The sink: a loopback HTTP proxy that refuses everything and records it. */
async function startSink (): Promise<{ server: Server, port: number, seen: string[] }> {
  const seen: string[] = []
  const sockets = new Set<Socket>()
  const server = createServer((req, res) => {
    seen.push(`${req.method ?? '?'} ${req.url ?? ''}`)
    req.resume()
    res.writeHead(502, { connection: 'close' }).end()
  })
  server.on('connection', (s: Socket) => { sockets.add(s); s.on('close', () => sockets.delete(s)) })
  server.on('connect', (req, socket: Socket) => {
    seen.push(`CONNECT ${req.url ?? ''}`)
    socket.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\n\r\n')
  })
  server.on('upgrade', (req, socket: Socket) => {
    seen.push(`UPGRADE ${req.url ?? ''}`)
    socket.destroy()
  })
  server.on('close', () => { for (const s of sockets) s.destroy() })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  return { server, port: (server.address() as AddressInfo).port, seen }
}

export async function launchBrowser (): Promise<TestBrowser> {
  const sink = await startSink()
  const marker = `--pind-test-browser=${randomUUID()}`
  let browser: Browser
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      // as root (CI, these machines) Chromium's sandbox cannot start; Playwright would add --no-sandbox too
      chromiumSandbox: false,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-domain-reliability',
        '--disable-client-side-phishing-detection',
        '--no-pings',
        `--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE *.localhost, EXCLUDE 127.0.0.1`,
        `--proxy-server=http://127.0.0.1:${sink.port}`,
        marker
      ]
    })
  } catch (err) {
    sink.server.close()
    throw err
  }
  // Playwright starts the browser as the leader of its own process group: its helpers (zygote, renderers, network service) are in it
  const pid = await waitFor(() => pidWithArg(marker), 'the browser process')
  launched.add(pid)

  let closed: Promise<void> | undefined
  const close = async (): Promise<void> => {
    closed ??= (async () => {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<'late'>(resolve => { timer = setTimeout(() => resolve('late'), CLOSE_WAIT_MS) })
      const outcome = await Promise.race([browser.close().then(() => 'closed' as const, () => 'failed' as const), late])
      clearTimeout(timer)
      const gone = (): true | undefined => groupMembers(pid).length === 0 ? true : undefined
      let clean = outcome === 'closed'
      if (clean) {
        try { await waitFor(gone, `the browser's processes (group ${pid}) to exit`, CLOSE_WAIT_MS) } catch { clean = false }
      }
      if (!clean) {
        console.warn(`the browser (pid ${pid}) did not close (${outcome === 'closed' ? 'processes left' : outcome}): killing its process group`)
        try { process.kill(-pid, 'SIGKILL') } catch {}
        for (const p of groupMembers(pid)) {
          try { process.kill(p, 'SIGKILL') } catch {}
        }
        await waitFor(gone, `the browser's processes (group ${pid}) to die`)
      }
      launched.delete(pid)
      await new Promise<void>(resolve => sink.server.close(() => resolve()))
    })()
    await closed
  }

  return {
    browser,
    pid,
    offLoopback: () => [...sink.seen],
    processes: () => groupMembers(pid),
    close
  }
}
