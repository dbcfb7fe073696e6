/**
 * The packaged binary's young generation once it serves (issue 18): loading
 * the bundle grows it (to 16 MiB measured) before `serve` can hold it, and
 * held at that size it stayed 16 MiB under any load; serve brings it back to
 * its minimum once started (src/cli/serve.ts, src/heap.ts).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { BINARY, startPind, type PindProcess } from '../helpers/pind.js'
import { freePort } from '../helpers/ports.js'

const MiB = 1024 * 1024
let pind: PindProcess | undefined

afterEach(async () => { await pind?.stop('SIGKILL') })

describe('the heap of a started binary', () => {
  it('has its young generation at its minimum (2 MiB), not as large as start-up grew it', async () => {
    const port = await freePort()
    pind = await startPind({ binary: BINARY, args: ['--metrics-listen', `127.0.0.1:${port}`] })
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    const size = (space: string): number => Number(new RegExp(`^pind_nodejs_heap_space_size_total_bytes\\{space="${space}"\\} (\\d+)$`, 'm').exec(text)?.[1])
    expect(size('old')).toBeGreaterThan(0)
    expect(size('new')).toBeLessThanOrEqual(2 * MiB)
  })
})
