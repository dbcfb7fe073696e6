import { createServer } from 'node:net'

/** A free loopback TCP port (bind port 0, read it, close). */
export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => { resolve(port) })
    })
  })
}

/**
 * Polls `check` until it returns a value or the deadline passes (readiness, never a fixed sleep),
 * backing off from 10 ms to `maxDelayMs` between checks (raise it when the checks themselves would
 * keep what is watched from going quiet).
 */
export async function waitFor<T> (check: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 30_000, maxDelayMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let delay = 10
  for (;;) {
    const v = await check()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, delay))
    delay = Math.min(delay * 2, maxDelayMs)
  }
}
