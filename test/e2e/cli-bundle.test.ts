/**
 * The binary starts most commands on its CLI bundle (scripts/bundle.mjs --cli,
 * scripts/binary-entry.cjs) and serve on the whole program. A command the CLI bundle cannot finish
 * (an admin command on a stopped data dir needs the ledger) starts again on the whole program in
 * the same process, having changed nothing. Which bundle ran shows in the code cache each start
 * leaves: its file names start with the bundle's sha256.
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { isolatedBinary, runPind, startPind, tempDir } from '../helpers/pind.js'

let bin: string
let home: string

beforeAll(() => { ({ bin, home } = isolatedBinary('pind-bin-cli-')) })

/** the code cache files in `native`: build (the bundle's sha256, 16 digits) and kind of start */
function caches (native: string): string[] {
  return readdirSync(join(native, 'pind-compile-cache')).filter(f => /^[0-9a-f]{16}-/.test(f)).map(f => f.split('-').slice(0, 2).join('-')).sort()
}

const OWNER = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc'

describe("the binary's CLI bundle", () => {
  it('runs --version, --help and admin commands through a running serve; a stopped data dir hands the command to the whole program, which finishes it', async () => {
    const native = tempDir('pind-cli-cc-')
    const env = { HOME: home, NODE_PATH: undefined, PIND_CONFIG: undefined, PKG_NATIVE_CACHE_PATH: native }

    const version = await runPind(['--version'], { binary: bin, env })
    expect(version.code).toBe(0)
    expect(version.out).toMatch(/^pind \d+\.\d+\.\d+ \(commit /)
    const [info] = caches(native)
    const cli = (info as string).split('-')[0] as string
    expect(caches(native)).toEqual([`${cli}-info`])
    const help = await runPind(['keys', '--help'], { binary: bin, env })
    expect(help.code).toBe(0)
    expect(help.out).toContain('mint')

    const dataDir = tempDir()
    const pind = await startPind({ binary: bin, dataDir, env })
    let whole: string
    try {
      whole = (caches(native).find(c => c.endsWith('-serve')) as string).split('-')[0] as string
      expect(whole).not.toBe(cli)
      const minted = await runPind(['keys', 'mint', '--owner', OWNER, '--data-dir', dataDir], { binary: bin, env })
      expect(minted.err).toContain('via the running pind serve')
      expect(minted.code).toBe(0)
      expect(minted.out).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/)
      // the CLI bundle did it alone
      expect(caches(native)).toEqual([`${cli}-cli`, `${cli}-info`, `${whole}-serve`].sort())
    } finally {
      expect(await pind.stop()).toBe(0)
    }

    // a stopped data dir: the ledger is the whole program's; one line out, the lock given back
    const offline = await runPind(['keys', 'mint', '--owner', OWNER, '--note', 'offline', '--json', '--data-dir', dataDir], { binary: bin, env })
    expect(offline.err).toContain('on the data dir')
    expect(offline.code).toBe(0)
    const lines = offline.out.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0] as string)).toMatchObject({ owner: OWNER, via: 'data-dir' })
    expect(caches(native)).toEqual([`${cli}-cli`, `${cli}-info`, `${whole}-cli`, `${whole}-serve`].sort())

    // both tokens are in the ledger, as the whole program and a serve see it
    const listed = await runPind(['keys', 'list', '--json', '--data-dir', dataDir], { binary: bin, env })
    expect(listed.code).toBe(0)
    const tokens = (JSON.parse(listed.out) as { operatorTokens: Array<{ owner: string, note?: string }> }).operatorTokens.filter(t => t.owner.toLowerCase() === OWNER)
    expect(tokens.map(t => t.note ?? null).sort()).toEqual(['offline', null].sort())
    const again = await startPind({ binary: bin, dataDir, env })
    expect(await again.stop()).toBe(0)
  })

  it('serve and the commands that always need the whole program start on it', async () => {
    const native = tempDir('pind-cli-cc-')
    const env = { HOME: home, NODE_PATH: undefined, PIND_CONFIG: undefined, PKG_NATIVE_CACHE_PATH: native }
    const dataDir = tempDir()
    const first = await startPind({ binary: bin, dataDir, env })
    expect(await first.stop()).toBe(0)
    const gc = await runPind(['gc', '--dry-run', '--data-dir', dataDir], { binary: bin, env })
    expect(gc.code).toBe(0)
    const kinds = caches(native)
    expect(kinds).toHaveLength(2)
    expect(new Set(kinds.map(k => k.split('-')[0])).size).toBe(1)
  })

  it('hands over the commands that meet a module it lacks before they write anything: config show with a checksummed address, keys peer-id', async () => {
    const native = tempDir('pind-cli-cc-')
    const env = { HOME: home, NODE_PATH: undefined, PIND_CONFIG: undefined, PKG_NATIVE_CACHE_PATH: native }
    // viem checks the checksum: the CLI bundle has none of it
    const shown = await runPind(['config', 'show', '--json', '--pay-to', '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'], { binary: bin, env })
    expect(shown.err).toBe('')
    expect(shown.code).toBe(0)
    expect(shown.out.trim().split('\n')).toHaveLength(1)
    expect(JSON.parse(shown.out).settings).toContainEqual(expect.objectContaining({ key: 'payTo', value: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', from: '--pay-to' }))
    const bad = await runPind(['config', 'show', '--pay-to', '0x3c44CdDdB6a900fa2b585dd299e03d12FA4293BC'], { binary: bin, env })
    expect(bad.code).toBe(2)
    expect(bad.err).toMatch(/checksum/i)
    const builds = new Set(caches(native).map(c => c.split('-')[0]))
    expect(builds.size).toBe(2)

    const dataDir = tempDir()
    const pind = await startPind({ binary: bin, dataDir, env })
    expect(await pind.stop()).toBe(0)
    const serving = pind.stderr().split('\n').find(l => l.includes('"msg":"serving"')) as string
    const peer = (JSON.parse(serving) as { peerId: string }).peerId
    expect(peer).toMatch(/^12D3KooW\w+$/)
    const id = await runPind(['keys', 'peer-id', '--data-dir', dataDir], { binary: bin, env })
    expect(id.code).toBe(0)
    expect(id.out.trim().split('\n')).toHaveLength(1)
    expect(id.out.trim()).toBe(peer)
  })
})
