/**
 * A fault nothing in serve catches stops the process (node's default, kept:
 * the next start recovers what it left), but first it is logged as one
 * structured line, so an operator's log shipper sees why the service
 * stopped. The fault is thrown by a module preloaded through NODE_OPTIONS
 * (the bundle honours it, as node does) when the test sends it SIGUSR2.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { startPind, tempDir } from '../helpers/pind.js'

function preload (body: string): string {
  const file = join(tempDir('pind-preload-'), 'fault.cjs')
  writeFileSync(file, body)
  return file
}

async function faultAndExit (hook: string): Promise<{ code: number | null, lines: Array<Record<string, unknown>> }> {
  const pind = await startPind({ env: { NODE_OPTIONS: `--require ${preload(hook)}` } })
  const exited = new Promise<number | null>(resolve => { pind.proc.once('exit', code => { resolve(code) }) })
  pind.proc.kill('SIGUSR2')
  const code = await exited
  const lines = pind.stderr().split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as Record<string, unknown>)
  return { code, lines }
}

describe('serve: an uncaught fault is logged, then stops the process', () => {
  it('an exception: one error line with its origin, message and stack; non-zero exit', async () => {
    const { code, lines } = await faultAndExit("process.on('SIGUSR2', () => { throw new Error('fault thrown by the test') })\n")
    expect(code).not.toBe(0)
    const fatal = lines.find(l => l.msg === 'stopping on an uncaught error')
    expect(fatal, JSON.stringify(lines.slice(-3))).toBeDefined()
    expect(fatal).toMatchObject({ level: 'error', origin: 'uncaughtException', error: { name: 'Error', message: 'fault thrown by the test' } })
    expect(String((fatal!.error as { stack: string }).stack)).toContain('fault.cjs')
  })

  it('a rejection nothing handles: the same, with its origin', async () => {
    const { code, lines } = await faultAndExit("process.on('SIGUSR2', () => { void Promise.reject(new TypeError('rejection left by the test')) })\n")
    expect(code).not.toBe(0)
    expect(lines.find(l => l.msg === 'stopping on an uncaught error')).toMatchObject({
      level: 'error', origin: 'unhandledRejection', error: { name: 'TypeError', message: 'rejection left by the test' }
    })
  })
})
