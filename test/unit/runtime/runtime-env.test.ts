import { describe, expect, it } from 'vitest'
import { environmentAssignments } from '../../../scripts/runtime-env.mjs'

describe('environmentAssignments (Environment= and ENV as systemd and docker read them)', () => {
  it('takes several assignments per line, quoted whole or in part, and leaves words without = out', () => {
    expect(environmentAssignments('A=1 B=2')).toEqual({ A: '1', B: '2' })
    expect(environmentAssignments('"NODE_OPTIONS=--a --b" C=3')).toEqual({ NODE_OPTIONS: '--a --b', C: '3' })
    expect(environmentAssignments("NODE_OPTIONS=\"--a --b\" \\tD='x y'")).toMatchObject({ NODE_OPTIONS: '--a --b' })
    expect(environmentAssignments('GLIBC_TUNABLES=glibc.malloc.mmap_threshold=16384 junk')).toEqual({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=16384' })
    expect(() => environmentAssignments('A="open')).toThrow(/unterminated quote/)
  })
})
