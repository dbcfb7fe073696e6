import { describe, expect, it } from 'vitest'
import { releaseBytes } from '../../../src/runtime/buffers.js'

describe('releaseBytes', () => {
  it('frees a view that is the whole of its ArrayBuffer', () => {
    const whole = Buffer.from(new Uint8Array([1, 2, 3]).buffer)
    releaseBytes(whole)
    expect(whole.buffer.detached).toBe(true)
    expect(whole.byteLength).toBe(0)
    releaseBytes(whole) // twice is harmless
  })

  it('leaves alone views on part of a buffer, pooled Buffers and shared memory', () => {
    const big = new Uint8Array(8)
    releaseBytes(big.subarray(0, 4))
    releaseBytes(big.subarray(4))
    expect(big.buffer.detached).toBe(false)
    const pooled = Buffer.from('small') // a slice of node's shared allocation pool
    releaseBytes(pooled)
    expect(pooled.toString()).toBe('small')
    const shared = new Uint8Array(new SharedArrayBuffer(4))
    releaseBytes(shared)
    expect(shared.byteLength).toBe(4)
  })
})
