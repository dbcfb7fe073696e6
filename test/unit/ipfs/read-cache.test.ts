/**
 * The S3 backend's on-disk read cache: bounded by bytes, least recently used
 * first out, rebuilt from its folder at start (temporary files dropped), and
 * never caching a block dropped (deleted by gc) while it was being read.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ReadCache } from '../../../src/ipfs/read-cache.js'
import { tempDir } from '../../helpers/pind.js'

const KB = 1024

describe('ReadCache', () => {
  it('stays within its bound, evicting the least recently used block first', async () => {
    const dir = join(tempDir(), 'cache')
    const cache = new ReadCache(dir, 40 * KB)
    for (const name of ['BA', 'BB', 'BC', 'BD']) await cache.put(name, [randomBytes(10 * KB)], cache.ticket())
    expect(cache.bytes).toBe(40 * KB)
    expect(await cache.get('BA')).toBeDefined() // BA is now the most recently used
    await cache.put('BE', [randomBytes(10 * KB)], cache.ticket())
    expect(cache.bytes).toBe(40 * KB)
    expect(cache.has('BB')).toBe(false) // the least recently used went
    expect(existsSync(join(dir, 'BB'))).toBe(false)
    for (const name of ['BA', 'BC', 'BD', 'BE']) expect(cache.has(name)).toBe(true)
    // a block larger than a quarter of the cache is not cached at all
    await cache.put('BF', [randomBytes(11 * KB)], cache.ticket())
    expect(cache.has('BF')).toBe(false)
    expect(cache.hits).toBe(1)
  })

  it('is rebuilt from its folder at start, without half-written files', async () => {
    const dir = join(tempDir(), 'cache')
    const first = new ReadCache(dir, 100 * KB)
    const bytes = randomBytes(5 * KB)
    await first.put('BX', [bytes], first.ticket())
    writeFileSync(join(dir, 'BY.123.tmp'), 'torn')
    const again = new ReadCache(dir, 100 * KB)
    expect(again.blocks).toBe(1)
    expect(Buffer.from(await again.get('BX') as Uint8Array).equals(bytes)).toBe(true)
    expect(readdirSync(dir)).toEqual(['BX'])
    // and a smaller bound at start evicts down to it
    expect(new ReadCache(dir, 1 * KB).blocks).toBe(0)
  })

  it('does not cache a block dropped while it was being read, and drops what gc deletes', async () => {
    const cache = new ReadCache(join(tempDir(), 'cache'), 100 * KB)
    const ticket = cache.ticket() // a read from the bucket begins
    await cache.drop('BZ') // gc deletes the block meanwhile
    await cache.put('BZ', [randomBytes(KB)], ticket) // the read ends
    expect(cache.has('BZ')).toBe(false)
    await cache.put('BZ', [randomBytes(KB)], cache.ticket())
    expect(cache.has('BZ')).toBe(true)
    await cache.drop('BZ')
    expect(cache.has('BZ')).toBe(false)
    expect(await cache.get('BZ')).toBeUndefined()
  })

  it('takes a committed block in by moving its staged file', async () => {
    const root = tempDir()
    const cache = new ReadCache(join(root, 'cache'), 100 * KB)
    const staged = join(root, 'staged.data')
    writeFileSync(staged, randomBytes(2 * KB))
    expect(await cache.adopt('BQ', staged, 2 * KB)).toBe(true)
    expect(existsSync(staged)).toBe(false)
    expect((await cache.get('BQ'))?.byteLength).toBe(2 * KB)
  })
})
