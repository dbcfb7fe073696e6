/**
 * Connection limit defaults follow the open-file limit; what an operator sets wins.
 */
import { describe, expect, it } from 'vitest'
import { connectionLimits, openFileLimit } from '../../../src/http/connections.js'

describe('connectionLimits', () => {
  it('gives HTTP half the descriptors and one client an eighth of that, unless set', () => {
    expect(connectionLimits({}, 1024)).toEqual({ maxConnections: 512, maxPerClient: 64 })
    expect(connectionLimits({}, 65536)).toEqual({ maxConnections: 32768, maxPerClient: 4096 })
    expect(connectionLimits({}, 100)).toEqual({ maxConnections: 64, maxPerClient: 16 })
    expect(connectionLimits({ maxConnections: 200 }, 1024)).toEqual({ maxConnections: 200, maxPerClient: 25 })
    expect(connectionLimits({ maxConnections: 200, maxPerClient: 3 }, 1024)).toEqual({ maxConnections: 200, maxPerClient: 3 })
  })

  it('reads this process\'s open-file limit', () => {
    expect(openFileLimit()).toBeGreaterThan(0)
  })
})
