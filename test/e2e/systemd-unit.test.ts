/**
 * scripts/pind.service, run for real: the built binary under the unit's own
 * restrictions (read from the unit file by test/helpers/systemd-sandbox.ts:
 * its mounts, user, capabilities, system call filter and address families),
 * with the unit's ExecStart, Environment and the example /etc/pind/pind.json,
 * the production listen address (/ip4/0.0.0.0), a real NOTIFY_SOCKET, and a
 * paid upload on the local chain. Also: the harness really restricts (a
 * probe), the unit as issue 15 found it fails as found (AF_NETLINK), and
 * systemd-analyze's exposure score.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { payingFetch, uploadForm } from '../helpers/paying-client.js'
import { BINARY, ROOT } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'
import { runUnit, securityScore, seccompProgram, parseUnit, serviceOf, type UnitRunOptions } from '../helpers/systemd-sandbox.js'

const UNIT_FILE = join(ROOT, 'scripts/pind.service')
const UNIT = readFileSync(UNIT_FILE, 'utf8')
const EXAMPLE_CONFIG = join(ROOT, 'scripts/pind.json')
/** the unit's User=pind, as a uid that owns nothing else on this machine */
const UID = 64123

let chain: DevChain
beforeAll(async () => { chain = await startDevChain() })
afterAll(async () => { await chain?.stop() })

/**
 * the unit's files: the binary, the example config, the settler key (0600, the service user's).
 * The config is the example without p2pAnnounce: then libp2p announces its listen addresses and,
 * listening on 0.0.0.0, lists the machine's interfaces — the path that needs AF_NETLINK.
 */
function files (): UnitRunOptions['files'] {
  const config = JSON.parse(readFileSync(EXAMPLE_CONFIG, 'utf8')) as Record<string, unknown>
  delete config.p2pAnnounce
  return [
    { path: '/usr/local/bin/pind', copyFrom: BINARY, mode: 0o755 },
    { path: '/etc/pind/pind.json', content: JSON.stringify(config), mode: 0o644 },
    { path: '/etc/pind/settler.key', content: `${chain.settlerKey}\n`, mode: 0o600, owned: true }
  ]
}

/** what a test may not take from the example config: this machine's chain and free ports (the p2p port on 0.0.0.0 as in production) */
async function overrides (): Promise<Record<string, string>> {
  return {
    PIND_RPC_URL: chain.rpcUrl,
    PIND_ASSET: chain.usdc,
    PIND_PAY_TO: chain.payTo,
    PIND_PORT: String(await freePort()),
    PIND_P2P_LISTEN: `/ip4/0.0.0.0/tcp/${await freePort()}`,
    PIND_METRICS_LISTEN: `127.0.0.1:${await freePort()}`,
    // the example joins the public IPFS DHT through the public bootstrap peers: a test never dials them
    PIND_ROUTING: 'none'
  }
}

describe('the systemd unit', () => {
  it('scores below 3 in systemd-analyze security, and its Documentation= parses', () => {
    const { score, text } = securityScore(UNIT_FILE)
    expect(score, text).toBeLessThan(3)
    const unit = parseUnit(UNIT)
    for (const [k, v] of unit.get('Unit') ?? []) {
      if (k === 'Documentation') for (const uri of v.split(/\s+/)) expect(uri).toMatch(/^(https?|file|man|info):\S+$/)
    }
  })

  it('the harness applies the unit: read-only system, private /tmp and /dev, no home, the service user without capabilities, seccomp, address families', async () => {
    const probe = [
      'echo uid=$(id -u)',
      'echo umask=$(umask)',
      'touch /usr/local/bin/x 2>/dev/null && echo usr=writable || echo usr=readonly',
      'touch /etc/x 2>/dev/null && echo etc=writable || echo etc=readonly',
      'touch /var/lib/pind/x && echo state=writable',
      'echo tmp=$(ls -A /tmp | wc -l)',
      'ls /root >/dev/null 2>&1 && echo home=open || echo home=closed',
      'echo dev=$(ls /dev | tr "\\n" ,)',
      'grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status | tr -d "\\t " | tr "\\n" " "; echo',
      'echo procs=$(ls /proc | grep -c "^[0-9]")',
      'echo procsys=$(ls /proc/sys 2>/dev/null | wc -l)',
      'hostname probe-x 2>/dev/null && echo hostname=changed || echo hostname=kept',
      '/usr/bin/python3 -c "import socket\nfor f in (socket.AF_INET, socket.AF_NETLINK, socket.AF_PACKET):\n  try:\n    socket.socket(f, socket.SOCK_DGRAM if f != socket.AF_NETLINK else socket.SOCK_RAW); print(f.name + \'=ok\')\n  except OSError as e: print(f.name + \'=\' + str(e.errno))"',
      'unshare --user true 2>/dev/null && echo userns=created || echo userns=refused'
    ].join('\n')
    const run = await runUnit({ unit: UNIT, files: files(), uid: UID, gid: UID, command: ['/bin/sh', '-c', probe] })
    const code = await new Promise(resolve => { run.proc.once('exit', resolve) })
    const out = run.stdout()
    expect(code, `${out}\n${run.stderr()}`).toBe(0)
    expect(out).toMatch(`uid=${UID}`)
    expect(out).toMatch('umask=0077')
    expect(out).toMatch('usr=readonly')
    expect(out).toMatch('etc=readonly')
    expect(out).toMatch('state=writable')
    expect(out).toMatch('tmp=0')
    expect(out).toMatch('home=closed')
    expect(out).toMatch(/dev=fd,full,null,random,shm,stderr,stdin,stdout,tty,urandom,zero,/)
    expect(out).toMatch(/CapEff:0{16} /)
    expect(out).toMatch(/CapBnd:0{16} /)
    expect(out).toMatch(/NoNewPrivs:1 /)
    expect(out).toMatch(/Seccomp:2 /) // a filter is installed
    expect(Number(/procs=(\d+)/.exec(out)?.[1])).toBeLessThan(5) // only its own processes
    expect(out).toMatch('procsys=0')
    expect(out).toMatch('hostname=kept')
    expect(out).toMatch('AF_INET=ok')
    expect(out).toMatch('AF_NETLINK=ok')
    expect(out).toMatch('AF_PACKET=97') // EAFNOSUPPORT, as systemd answers
    expect(out).toMatch('userns=refused')
  })

  it('without AF_NETLINK, the production listen address fails as issue 15 found (the harness catches what systemd would)', async () => {
    const old = UNIT.replace(/^RestrictAddressFamilies=.*$/m, 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX')
    expect(seccompProgram(serviceOf(parseUnit(old))).families).not.toContain('AF_NETLINK')
    const run = await runUnit({ unit: old, files: files(), uid: UID, gid: UID, env: await overrides() })
    const code = await Promise.race([
      new Promise(resolve => { run.proc.once('exit', resolve) }),
      new Promise(resolve => setTimeout(resolve, 30_000)).then(async () => { await run.stop(); return 'still running' })
    ])
    expect(code).toBe(1)
    expect(run.stderr()).toMatch(/uv_interface_addresses returned Unknown system error 97/)
  })

  it('starts the built binary as documented, tells systemd when it is ready, takes a paid upload, and stops on KillSignal', async () => {
    const env = await overrides()
    const run = await runUnit({ unit: UNIT, files: files(), uid: UID, gid: UID, env })
    try {
      const url = `http://127.0.0.1:${env.PIND_PORT}`
      // READY=1 comes from systemd-notify (a child: NotifyAccess=all), once serve answers
      const ready = await waitFor(() => {
        if (run.proc.exitCode != null) throw new Error(`serve exited ${run.proc.exitCode}:\n${run.stderr()}`)
        return run.notifications().find(n => / READY=1/.test(n))
      }, 'READY=1 on NOTIFY_SOCKET', 60_000)
      expect(ready).toMatch(/MAINPID=\d+/)
      expect(ready).toMatch(/STATUS=serving /)
      // the MAINPID it reports is the pid the manager started
      expect(Number(/MAINPID=(\d+)/.exec(ready)?.[1])).toBe(run.pid)
      // the runtime tuning of the unit's Environment= is what serve runs with (docs/runtime.md): glibc and V8 read
      // theirs at start, and serve's own settings are in its start-up log line
      const environ = readFileSync(`/proc/${run.pid}/environ`, 'utf8').split('\0')
      expect(environ).toContain('GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4194304')
      expect(environ).toContain('NODE_OPTIONS=--max-semi-space-size=4')
      const serving = run.stderr().split('\n').map(l => { try { return JSON.parse(l) } catch { return undefined } }).find(l => l?.msg === 'serving')
      expect(serving?.runtime).toMatchObject({ idleCollection: true, heapTrim: true, mallocTrim: true, heapGrowingPercent: 50, releaseBuffers: true, NODE_OPTIONS: '--max-semi-space-size=4' })
      expect((await fetch(`${url}/health`)).status).toBe(200)
      const r = await fetch(`${url}/ready`)
      expect(r.status, await r.clone().text()).toBe(200)
      expect((await r.json() as any).checks.payments).toMatchObject({ ok: true, state: 'ready' })

      const bytes = randomBytes(300_000)
      const up = await payingFetch(chain, chain.payers[0]!.privateKey)(`${url}/upload`, { method: 'POST', body: uploadForm(bytes) })
      expect(up.status, await up.clone().text()).toBe(201)
      const body = await up.json() as any
      const got = Buffer.from(await (await fetch(`${url}/ipfs/${body.cid}`)).arrayBuffer())
      expect(got.equals(bytes)).toBe(true)
      const metrics = await (await fetch(`http://${env.PIND_METRICS_LISTEN}/metrics`)).text()
      expect(metrics).toMatch(/pind_settler_balance_wei \d/)
    } finally {
      expect(await run.stop()).toBe(0)
    }
    expect(run.notifications().some(n => / STOPPING=1/.test(n))).toBe(true)
    // the banner is a log line; UMask=0077 keeps the ledger private
    expect(run.stderr()).toMatch(/"msg":"serving"/)
    const state = /"dataDir":"([^"]+)"/.exec(run.stderr())?.[1]
    expect(state).toBe('/var/lib/pind')
  })
})

