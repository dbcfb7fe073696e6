/**
 * The daemon's stop: steps run in the reverse order of their start, a failed
 * step does not keep the next from running, and a stop that hangs is given
 * up on after its limit, naming the step it hangs in.
 */
import { describe, expect, it } from 'vitest'
import { createLogger } from '../../src/kernel/log.js'
import { Lifecycle, startedBy, stopWithin } from '../../src/app/lifecycle.js'

function capture (): { log: ReturnType<typeof createLogger>, lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  return { log: createLogger({ level: 'debug', write: (line: string) => { lines.push(JSON.parse(line)) } }), lines }
}

describe('the daemon stop', () => {
  it('runs the steps last added first, past one that fails, once', async () => {
    const { log, lines } = capture()
    const steps = new Lifecycle(log)
    const ran: string[] = []
    steps.add('lock', () => { ran.push('lock') })
    steps.add('ledger', async () => { ran.push('ledger'); throw new Error('disk gone') })
    steps.add('http', async () => { await new Promise(resolve => setTimeout(resolve, 5)); ran.push('http') })
    await steps.stop()
    await steps.stop()
    expect(ran).toEqual(['http', 'ledger', 'lock'])
    expect(lines.find(l => l.msg === 'error while stopping')).toMatchObject({ step: 'ledger' })
    expect(steps.current()).toBeUndefined()
  })

  it('gives up on a step that hangs after the limit, and says which step', async () => {
    const { log, lines } = capture()
    const steps = new Lifecycle(log)
    const ran: string[] = []
    steps.add('ledger', () => { ran.push('ledger') })
    steps.add('ipfs node', async () => { await new Promise(() => {}) })
    steps.add('http', () => { ran.push('http') })
    const outcome = await stopWithin(async () => { await steps.stop() }, 100, () => steps.current(), log)
    expect(outcome).toBe('gave up')
    expect(ran).toEqual(['http'])
    expect(lines.find(l => l.msg === 'stopping took too long: exiting without finishing it')).toMatchObject({ step: 'ipfs node', waitedSeconds: 0.1 })
  })

  it('returns as soon as the steps are done, and passes a failure of the stop on', async () => {
    const { log } = capture()
    const steps = new Lifecycle(log)
    steps.add('http', () => {})
    expect(await stopWithin(async () => { await steps.stop() }, 60_000, () => steps.current(), log)).toBe('stopped')
    await expect(stopWithin(async () => { throw new Error('drain failed') }, 60_000, () => undefined, log)).rejects.toThrow('drain failed')
  })

  it('starts components in order and stops them last started first; one that fails to start is not stopped', async () => {
    const { log } = capture()
    const life = new Lifecycle(log)
    const ran: string[] = []
    const component = (name: string): { start: () => void, stop: () => void } => ({ start: () => { ran.push(`start ${name}`) }, stop: () => { ran.push(`stop ${name}`) } })
    await life.start('ledger', component('ledger'))
    await life.start('gc', component('gc'))
    await expect(life.start('broken', { start: () => { throw new Error('no port') }, stop: () => { ran.push('stop broken') } })).rejects.toThrow('no port')
    await life.stop()
    expect(ran).toEqual(['start ledger', 'start gc', 'stop gc', 'stop ledger'])
  })

  it('startedBy: the work starts at start(), once, and stop() before a start does nothing', async () => {
    const started: string[] = []
    const sweep = startedBy(() => { started.push('sweep'); return { stop: async () => { started.push('stopped') } } })
    await sweep.stop()
    expect(started).toEqual([])
    await sweep.start()
    await sweep.start()
    await sweep.stop()
    expect(started).toEqual(['sweep', 'stopped'])
  })
})
