/**
 * What serve tells a service manager while it starts (src/cli/notify.ts
 * startupReporter), read from a real NOTIFY_SOCKET (an abstract Unix datagram
 * socket: test/helpers/sandbox/sandbox-exec.c --notify-listen): each report
 * asks for more time (EXTEND_TIMEOUT_USEC) with what the start is doing
 * (STATUS=), at most one message per interval; nothing after done(), which
 * waits for what was sent; nothing at all without $NOTIFY_SOCKET.
 * test/e2e/systemd-start-timeout.test.ts shows what systemd makes of it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { startupReporter, START_EXTEND_MS } from '../../src/cli/notify.js'
import { silentLogger } from '../../src/kernel/log.js'
import { sandboxHelper } from '../helpers/systemd-sandbox.js'

const listeners: ChildProcess[] = []
afterEach(() => { for (const l of listeners.splice(0)) l.kill('SIGKILL') })

/** a NOTIFY_SOCKET and the messages it has read ("pid=<sender> <message>") */
async function notifySocket (): Promise<{ socket: string, messages: string[] }> {
  const name = `pind-notify-test-${process.pid}-${listeners.length}`
  const listener = spawn(sandboxHelper(), ['--notify-listen', name], { stdio: ['ignore', 'pipe', 'inherit'] })
  listeners.push(listener)
  const messages: string[] = []
  let buf = ''
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject)
    listener.stdout?.on('data', (b: Buffer) => {
      buf += b.toString()
      const lines = buf.split('\n')
      buf = lines.pop() as string
      // (systemd-notify's barrier is a message of its own)
      for (const l of lines) { if (l === 'listening') resolve(); else if (!/^pid=\d+ BARRIER=1$/.test(l)) messages.push(l) }
    })
  })
  return { socket: `@${name}`, messages }
}

describe('telling the service manager how the start goes', () => {
  it('asks for more time with the status, at most once per interval, and nothing after done()', async () => {
    const { socket, messages } = await notifySocket()
    const env = { ...process.env, NOTIFY_SOCKET: socket }
    const starting = startupReporter(silentLogger, env, { everyMs: 60_000 })
    starting.report('opening the ledger')
    starting.report('upgrading the ledger (compact:pin-numbers): 1,000 records')
    await starting.done()
    starting.report('too late')
    // systemd-notify waited until the listener read it (its barrier): it is there
    expect(messages).toHaveLength(1)
    expect(messages[0]).toMatch(new RegExp(`^pid=\\d+ EXTEND_TIMEOUT_USEC=${START_EXTEND_MS * 1000} STATUS=opening the ledger MAINPID=${process.pid}$`))

    const often = startupReporter(silentLogger, env, { everyMs: 0, extendMs: 7_000 })
    often.report('a')
    often.report('b')
    await often.done()
    expect(messages.slice(1).map(m => m.replace(/^pid=\d+ /, '')).sort()).toEqual([`EXTEND_TIMEOUT_USEC=7000000 STATUS=a MAINPID=${process.pid}`, `EXTEND_TIMEOUT_USEC=7000000 STATUS=b MAINPID=${process.pid}`])
  })

  it('does nothing without NOTIFY_SOCKET', async () => {
    const { messages } = await notifySocket()
    const env = { ...process.env }
    delete env.NOTIFY_SOCKET
    const starting = startupReporter(silentLogger, env, { everyMs: 0 })
    starting.report('opening the ledger')
    await starting.done()
    expect(messages).toEqual([])
  })
})
