/**
 * Issue 13, finding 17 (bullets 1 and 3; bullet 1 = issue 15, item 3): the
 * data dir of the packaged binary. Run under a umask of 022, as a service
 * manager or a shell commonly does, the binary created the data dir 0755 and
 * ledger.mdb 0644 (every payer and payment readable by any local user),
 * because pkg unpacks lmdb's native addon into `<data-dir>/.native` first.
 * And a data dir path of more than about 100 characters made serve exit with
 * "listen EINVAL" (the admin socket's path limit).
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createHash, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { isolatedBinary, runPind, startPind } from '../helpers/pind.js'
import { shellWrapper } from '../helpers/hostile.js'

let dir: string
let bin: string
let home: string
let umask022: string
let chain: DevChain

beforeAll(async () => {
  ({ dir, bin, home } = isolatedBinary('pind-bin-dd-'))
  umask022 = shellWrapper('umask 022', [bin])
  chain = await startDevChain({ payers: 1 })
})
afterAll(async () => { await chain?.stop() })

const env = (): Record<string, string | undefined> => ({ HOME: home, NODE_PATH: undefined, PIND_CONFIG: undefined, PKG_NATIVE_CACHE_PATH: undefined })
const mode = (p: string): string => `0${(statSync(p).mode & 0o777).toString(8)}`

/** Every path under `root` (itself included) that group or others may use, with its mode. */
function openToOthers (root: string): string[] {
  const out: string[] = []
  const walk = (p: string): void => {
    const st = lstatSync(p)
    if (st.isSymbolicLink()) return
    if ((st.mode & 0o077) !== 0) out.push(`${p} ${(st.mode & 0o777).toString(8)}`)
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name))
  }
  walk(root)
  return out
}

describe('the data dir of the binary, under umask 022', () => {
  const dataDir = (): string => join(dir, 'data')

  it('is created 0700 before anything is in it, and everything pind writes there is its owner\'s only', async () => {
    const { args, env: chainEnv } = chainArgs(chain)
    const pind = await startPind({ binary: umask022, cwd: dir, dataDir: dataDir(), args, env: { ...env(), ...chainEnv } })
    try {
      // a paid upload, so that block files, staging and payments exist too
      const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(1_500_000)) })
      expect(r.status).toBe(201)
      expect(mode(dataDir())).toBe('0700')
      expect(mode(join(dataDir(), 'ledger.mdb'))).toBe('0600')
      expect(mode(join(dataDir(), '.native'))).toBe('0700')
      expect(mode(join(dataDir(), 'admin.sock'))).toBe('0600')
      expect(openToOthers(dataDir())).toEqual([])
    } finally {
      expect(await pind.stop()).toBe(0)
    }
  })

  it('with PKG_NATIVE_CACHE_PATH in it (the unit\'s and the image\'s setting), V8\'s compile cache is there too, its owner\'s only', async () => {
    const data = join(dir, 'data-native')
    const pind = await startPind({ binary: umask022, cwd: dir, dataDir: data, env: { ...env(), PKG_NATIVE_CACHE_PATH: join(data, '.native') } })
    expect(await pind.stop()).toBe(0)
    expect(readdirSync(join(data, '.native', 'pind-compile-cache')).length).toBeGreaterThan(0)
    expect(openToOthers(data)).toEqual([])
  })

  it('left open to others by an older pind or a careless copy: closed at start, with a warning for each path', async () => {
    chmodSync(dataDir(), 0o755)
    chmodSync(join(dataDir(), 'ledger.mdb'), 0o644)
    chmodSync(join(dataDir(), 'identity.key'), 0o644)
    chmodSync(join(dataDir(), 'keys'), 0o755)
    for (const f of readdirSync(join(dataDir(), 'keys'))) chmodSync(join(dataDir(), 'keys', f), 0o644)
    const pind = await startPind({ binary: umask022, cwd: dir, dataDir: dataDir(), env: env() })
    try {
      expect(openToOthers(dataDir())).toEqual([])
      const warnings = pind.stderr().split('\n').filter(l => l.includes('closed group and other access')).map(l => JSON.parse(l))
      expect(warnings.map(w => [w.path, w.was])).toEqual(expect.arrayContaining([
        [dataDir(), '0755'], [join(dataDir(), 'ledger.mdb'), '0644'], [join(dataDir(), 'identity.key'), '0644'], [join(dataDir(), 'keys'), '0755']
      ]))
    } finally {
      expect(await pind.stop()).toBe(0)
    }
  })

  it('owned by another user who left it open: refuses to start, and says how to fix it', async () => {
    const foreign = join(dir, 'foreign')
    mkdirSync(foreign)
    chmodSync(foreign, 0o755)
    chmodSync(dir, 0o755) // so that user can run the binary
    try {
      const asNobody = ['--reuid=65534', '--regid=65534', '--clear-groups', '--', bin]
      const r = await runPind([...asNobody, 'serve', '--data-dir', foreign, '--port', '0'], { binary: '/usr/bin/setpriv', env: env() })
      expect(r.code).toBe(1)
      expect(r.err).toContain(`${foreign} is readable by other users (mode 0755)`)
      // (the owner check every command runs first, src/datadir/access.ts, says both)
      expect(r.err).toMatch(/run as the data dir's owner: sudo -u \S+ pind serve .*chmod -R go-rwx/)
      expect(readdirSync(foreign)).toEqual([])
    } finally {
      chmodSync(dir, 0o700)
    }
  })
})

describe('a data dir path longer than a Unix socket path allows', () => {
  it('serves, and admin commands reach the running serve through its socket in that dir', async () => {
    const deep = join(dir, 'a'.repeat(60), 'b'.repeat(60))
    expect(join(deep, 'admin.sock').length).toBeGreaterThan(120)
    const pind = await startPind({ binary: umask022, cwd: dir, dataDir: deep, env: env() })
    try {
      expect(existsSync(join(deep, 'admin.sock'))).toBe(true)
      const keys = await runPind(['keys', 'list', '--json', '--data-dir', deep], { binary: bin, env: env() })
      expect(keys.err).toMatch(/via the running pind serve/)
      expect(keys.code).toBe(0)
      expect(JSON.parse(keys.out).via).toBe('serve')
    } finally {
      expect(await pind.stop()).toBe(0)
    }
    expect(existsSync(join(deep, 'admin.sock'))).toBe(false)
    // and on the stopped data dir
    const offline = await runPind(['keys', 'list', '--data-dir', deep], { binary: bin, env: env() })
    expect(offline.code).toBe(0)
  })
})

describe("lmdb's native addon, unpacked into the data dir", () => {
  /** resident KiB of the binary's mapping at the highest offset in its file: the SEA blob, pkg's archive */
  const archiveRss = (pid: number): number => {
    const smaps = readFileSync(`/proc/${pid}/smaps`, 'utf8').split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/)
    const offset = (m: string): number => parseInt(m.split(' ')[2] ?? '0', 16)
    const [blob] = smaps.filter(m => m.split('\n')[0]?.endsWith(` ${bin}`)).sort((a, b) => offset(b) - offset(a))
    return Number(/^Rss:\s+(\d+) kB/m.exec(blob ?? '')?.[1] ?? NaN)
  }

  it('is taken from the data dir once there, without reading its 3.4 MiB in the binary again; a copy changed there is replaced', async () => {
    const dataDir = join(dir, 'addon')
    const first = await startPind({ binary: bin, cwd: dir, dataDir, env: env() })
    const unpacked = archiveRss(first.pid)
    expect(await first.stop()).toBe(0)
    const stampAfterFirst = readdirSync(join(dataDir, '.native', 'pkg'), { recursive: true }).filter(f => String(f).endsWith('.node.checked')).length
    expect(stampAfterFirst).toBe(2) // lmdb's and msgpackr-extract's, stamped as written
    const second = await startPind({ binary: bin, cwd: dir, dataDir, env: env() })
    try {
      // the bundle is read from the archive at every start (in part: what V8 compiles lazily); the
      // addon only the first time: 3.0-3.3 MiB of its 3.4 resident in the archive's mapping then
      expect(archiveRss(second.pid)).toBeLessThan(unpacked - 2 * 1024)
    } finally {
      expect(await second.stop()).toBe(0)
    }
    const [addon] = readdirSync(join(dataDir, '.native', 'pkg'), { recursive: true, withFileTypes: true })
      .filter(e => e.isFile() && e.name.startsWith('node.napi'))
      .map(e => join(e.parentPath, e.name))
      .filter(p => statSync(p).size > 1_000_000) // lmdb's, not msgpackr-extract's (17 KiB)
    const good = readFileSync(addon as string)
    // the first start wrote the copy out of the archive (bytes of this build, whose sha256 the bundle records) and left a stamp
    // of the file it wrote: the next starts do not read it again. The stamp's hash is the copy's.
    const st = statSync(addon as string, { bigint: true })
    expect(readFileSync(`${addon as string}.checked`, 'utf8')).toBe(`${createHash('sha256').update(good).digest('hex')} ${st.dev} ${st.ino} ${st.size} ${st.ctimeNs}\n`)
    writeFileSync(addon as string, Buffer.concat([good.subarray(0, 4096), Buffer.alloc(good.length - 4096)]))
    const third = await startPind({ binary: bin, cwd: dir, dataDir, env: env() })
    try {
      expect(readFileSync(addon as string).equals(good)).toBe(true)
      expect((await (await fetch(`${third.url}/health`)).json() as { status: string }).status).toBe('ok')
    } finally {
      expect(await third.stop()).toBe(0)
    }
  })
})
