/**
 * The binary keeps V8's code cache of the functions a start runs (scripts/binary-entry.cjs):
 * one file per kind of start (serve, --version or --help, other commands), written when missing and then used as it
 * is. A cache V8 rejects is written again at each start, which costs that start more than it saves:
 * serve's must be made before serve changes V8's flags at run time (the production runtime
 * environment's heap growth setting), or the next start rejects it.
 */
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { isolatedBinary, runPind, startPind, tempDir } from '../helpers/pind.js'

let bin: string
let home: string

beforeAll(() => { ({ bin, home } = isolatedBinary('pind-bin-cc-')) })

/** serve's 'serving' log line */
function servingLine (stderr: string): { startup: { code?: unknown } } {
  const line = stderr.split('\n').find(l => l.includes('"msg":"serving"'))
  if (line == null) throw new Error(`no 'serving' line in:\n${stderr}`)
  return JSON.parse(line)
}

/** the code cache files in `native`, name → inode (a rewrite is a rename of a new file: a new inode) */
function caches (native: string): Record<string, number> {
  const dir = join(native, 'pind-compile-cache')
  return Object.fromEntries(readdirSync(dir).filter(f => /^[0-9a-f]{16}-/.test(f)).map(f => [f, statSync(join(dir, f)).ino]))
}

describe("the binary's code cache", () => {
  it('is written once per kind of start and then used as it is, serve\'s too under the production runtime environment', async () => {
    const native = tempDir('pind-cc-')
    const env = { HOME: home, NODE_PATH: undefined, PIND_CONFIG: undefined, PKG_NATIVE_CACHE_PATH: native }

    const v1 = await runPind(['--version'], { binary: bin, env })
    expect(v1.code).toBe(0)
    expect(v1.out).toMatch(/^pind \d+\.\d+\.\d+ \(commit /)
    const cli = caches(native)
    expect(Object.keys(cli)).toEqual([expect.stringMatching(/^[0-9a-f]{16}-info-[0-9a-f]{8}$/)])
    const v2 = await runPind(['--version'], { binary: bin, env })
    expect(v2.out).toBe(v1.out)
    expect(caches(native)).toEqual(cli)

    // serve's 'serving' line says how the start read its code: the bundle's bytes inside the binary
    // as they are (not copied), and the cache mapped (scripts/native/binary-start.c), once there is one
    const dataDir = tempDir()
    const loads: unknown[] = []
    for (let i = 0; i < 2; i++) {
      const pind = await startPind({ binary: bin, dataDir, env })
      expect((await fetch(`${pind.url}/health`)).status).toBe(200)
      expect(await pind.stop()).toBe(0)
      loads.push(servingLine(pind.stderr()).startup.code)
    }
    expect(loads).toEqual([{ source: 'in place', cache: 'none' }, { source: 'in place', cache: 'mapped' }])
    const both = caches(native)
    expect(Object.keys(both).filter(f => !(f in cli))).toEqual([expect.stringMatching(/^[0-9a-f]{16}-serve-[0-9a-f]{8}$/)])
    const pind = await startPind({ binary: bin, dataDir, env })
    expect(await pind.stop()).toBe(0)
    expect(servingLine(pind.stderr()).startup.code).toEqual({ source: 'in place', cache: 'mapped' })
    expect(caches(native)).toEqual(both)
  })

  it('is the bundle run as a module when the binary is not there: `node dist/pind.cjs` has no code-load report', async () => {
    const dataDir = tempDir()
    const pind = await startPind({ dataDir })
    expect(await pind.stop()).toBe(0)
    expect(servingLine(pind.stderr()).startup.code).toBeUndefined()
  })
})
