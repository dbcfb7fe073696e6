/**
 * A long start under a real systemd (test/helpers/systemd-manager.ts). The
 * first start of this version on a ledger an earlier one wrote upgrades it
 * (the steps serving depends on, before it serves, e.g. index:owner-summaries
 * and index:pins-by-expiry: seconds per 20,000 records, minutes for a million
 * pins; the rest runs once it serves), which can outlast the unit's TimeoutStartSec=
 * (90 s by default): systemd would kill the start, again and again. Serve
 * asks for more time as long as the start moves on (EXTEND_TIMEOUT_USEC, with
 * STATUS= saying how far it is), so the built binary, under a unit with
 * scripts/pind.service's Type=notify and a TimeoutStartSec= of a few seconds,
 * upgrades a ledger for far longer than that and becomes active; the same
 * manager kills a start that outlasts it without asking (the control: what
 * serve did before).
 *
 * The unit's TimeoutStartSec= must be longer than serve takes to its first
 * message, which a busy machine stretches (a cold start took 1.5 s alone and
 * up to 4 s beside other work): it is not a constant but twice a cold start
 * of the binary measured here, just before; the upgrade is made long enough
 * for that budget (pins in proportion), so the start always outlasts it.
 */
import { join } from 'node:path'
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openLedgerEnv, type LedgerEnv } from '../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../src/ledger/lmdb/pins.js'
import { toLayout1 } from '../helpers/ledger.js'
import { BINARY, ROOT, startPind, tempDir } from '../helpers/pind.js'
import { paidPin } from '../helpers/records.js'
import { freePort } from '../helpers/ports.js'
import { serviceManagerAvailable, startServiceManager, type ServiceManager } from '../helpers/systemd-manager.js'
import { parseUnit, serviceOf } from '../helpers/systemd-sandbox.js'

/** pins per second of TimeoutStartSec= in the ledger an earlier version wrote: its upgrade before serving (~10 s for 100,000 on an idle machine) takes several times the budget */
const PINS_PER_SECOND = 20_000
/** the least TimeoutStartSec= */
const MIN_TIMEOUT_START = 3

/**
 * The unit's TimeoutStartSec=, in seconds: twice what a cold start of the binary to /health
 * (which includes serve's first message) takes on this machine now, and at least 3 s.
 */
async function timeoutStart (): Promise<number> {
  const t0 = performance.now()
  const pind = await startPind({ dataDir: tempDir('pind-long-start-probe-'), args: ['--routing', 'none'] })
  const coldMs = performance.now() - t0
  await pind.stop()
  return Math.max(MIN_TIMEOUT_START, Math.ceil(2 * coldMs / 1000))
}

const available = serviceManagerAvailable()
let manager: ServiceManager | undefined
afterAll(async () => { await manager?.close() })

/** a ledger in the layout before compact:payment-keys and compact:pin-numbers (test/helpers/ledger.ts toLayout1) and before the owner and expiry indexes, `n` paid uploads */
async function earlierLedger (dataDir: string, n: number): Promise<void> {
  const env = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
  try {
    const ledger = new PinLedger(env)
    await ledger.upgrade()
    const writes: Array<Promise<void>> = []
    for (let i = 0; i < n; i++) {
      const { pin, payment } = paidPin(`019ab3f1-2c4d-7e8f-9a0b-${i.toString(16).padStart(12, '0')}`, 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', { owner: `0x${(i % 16).toString(16).padStart(40, 'a')}`, pin: { pinnedUntil: '2099-01-01T00:00:00.000Z' } })
      // lmdb commits the transactions begun together in one
      writes.push(ledger.create(pin, payment))
      if (writes.length === 2000) await Promise.all(writes.splice(0))
    }
    await Promise.all(writes)
    await toLayout1(env, ledger)
    await env.transaction(() => { for (const u of ['index:owner-summaries', 'index:pins-by-expiry'] as const) env.setUpgraded(u, false) })
  } finally {
    await env.close()
  }
}

/** scripts/pind.service's start and stop directives, a short TimeoutStartSec=, and the built binary on a test data dir */
function unit (dataDir: string, port: number, out: string, timeoutStartS: number): string {
  const svc = serviceOf(parseUnit(readFileSync(join(ROOT, 'scripts/pind.service'), 'utf8')))
  const keep = ['Type', 'NotifyAccess', 'KillSignal', 'TimeoutStopSec'].map(k => `${k}=${svc.one(k) as string}`)
  expect(keep).toContain('Type=notify')
  return [
    '[Service]', ...keep, `TimeoutStartSec=${timeoutStartS}`, 'Restart=no',
    `ExecStart=${BINARY} serve`,
    `Environment=PIND_DATA_DIR=${dataDir}`, `Environment=PIND_PORT=${port}`, 'Environment=PIND_P2P_LISTEN=/ip4/127.0.0.1/tcp/0',
    'Environment=PIND_ROUTING=none', 'Environment=PIND_LOG_LEVEL=warn',
    `StandardOutput=append:${out}`, `StandardError=append:${out}`, ''
  ].join('\n')
}

/** a start that outlasts TimeoutStartSec= without telling systemd anything until READY=1 */
const silent = (timeoutStartS: number): string => ['[Service]', 'Type=notify', 'NotifyAccess=all', `TimeoutStartSec=${timeoutStartS}`, 'Restart=no',
  `ExecStart=/bin/sh -c 'sleep ${timeoutStartS * 2}; systemd-notify --ready; exec sleep 60'`, ''].join('\n')

describe.skipIf(!available)('a long start under systemd', () => {
  let dataDir: string
  let port: number
  let out: string
  let timeoutS: number
  let pins: number
  beforeAll(async () => {
    timeoutS = await timeoutStart()
    pins = PINS_PER_SECOND * Math.max(5, timeoutS)
    dataDir = tempDir('pind-long-start-')
    await earlierLedger(dataDir, pins)
    port = await freePort()
    out = join(tempDir('pind-long-start-out-'), 'pind.log')
    manager = await startServiceManager({ 'pind-long-start.service': unit(dataDir, port, out, timeoutS), 'silent-start.service': silent(timeoutS) })
  })

  it('the manager kills a start that outlasts TimeoutStartSec= without extending it (the control)', async () => {
    const m = manager as ServiceManager
    const start = await m.systemctl('start', 'silent-start.service')
    expect(start.code, start.out).not.toBe(0)
    expect(await m.show('silent-start.service', ['ActiveState', 'Result'])).toEqual({ ActiveState: 'failed', Result: 'timeout' })
  })

  it('serve upgrading a large ledger tells systemd how far it is and asks for more time: the start outlasts TimeoutStartSec= and succeeds', async () => {
    const m = manager as ServiceManager
    const statuses: string[] = []
    let starting = true
    const start = m.systemctl('start', 'pind-long-start.service').finally(() => { starting = false })
    // what systemctl status shows meanwhile
    while (starting) {
      const { StatusText: s } = await m.show('pind-long-start.service', ['StatusText'])
      if (s != null && s !== '' && statuses.at(-1) !== s) statuses.push(s)
      await new Promise(resolve => setTimeout(resolve, 200))
    }
    const { code, out: said } = await start
    const log = readFileSync(out, 'utf8')
    expect(code, `${said}\n${statuses.join('\n')}\n${log}`).toBe(0)
    // longer than systemd waits without an extension, as the manager measured it (from the exec to READY=1)
    const times = await m.show('pind-long-start.service', ['ExecMainStartTimestampMonotonic', 'ActiveEnterTimestampMonotonic'])
    const startUs = Number(times.ActiveEnterTimestampMonotonic) - Number(times.ExecMainStartTimestampMonotonic)
    expect(startUs, `TimeoutStartSec=${timeoutS}\n${statuses.join('\n')}`).toBeGreaterThan(timeoutS * 1_000_000)
    expect(statuses.some(s => /^upgrading the ledger \(index:(owner-summaries|pins-by-expiry)\): [\d,]+ records$/.test(s)), statuses.join('\n')).toBe(true)
    expect(log).toMatch(/"msg":"upgrading the ledger[^"]*".*"upgrade":"index:owner-summaries"/)
    expect(log).toMatch(/"msg":"upgrading the ledger[^"]*".*"upgrade":"index:pins-by-expiry"/)
    // READY=1's status is the last (no upgrade status arrives after it)
    const shown = await m.show('pind-long-start.service', ['ActiveState', 'SubState', 'StatusText'])
    expect(shown).toMatchObject({ ActiveState: 'active', SubState: 'running' })
    expect(shown.StatusText).toMatch(`serving http://127.0.0.1:${port}`)
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200)

    const stop = await m.systemctl('stop', 'pind-long-start.service')
    expect(stop.code, stop.out).toBe(0)
    expect(await m.show('pind-long-start.service', ['ActiveState', 'Result'])).toEqual({ ActiveState: 'inactive', Result: 'success' })
    // the upgrade before serving finished (the rest, while serving, may have been halted by the stop): every pin reads back
    const env: LedgerEnv = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
    try {
      expect(env.upgraded('index:owner-summaries') && env.upgraded('index:pins-by-expiry')).toBe(true)
      expect(new PinLedger(env).countByStatus().pinned).toBe(pins)
    } finally {
      await env.close()
    }
  })
})
