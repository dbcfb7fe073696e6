import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { KeyStore } from '../../../src/auth/keystore.js'
import { folderKeySource, type KeySource } from '../../../src/auth/key-source.js'

let root: string
let dir: string

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'pind-keystore-'))
  dir = join(root, 'keys')
})
afterEach(async () => {
  await rm(root, { recursive: true, force: true })
})

const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777
const keyFiles = async (): Promise<string[]> => (await readdir(dir)).filter(n => n.endsWith('.json')).sort()

describe('KeyStore.open', () => {
  it('creates the folder 0700 and a first active key in a 0600 file', async () => {
    const store = await KeyStore.open(dir)
    expect(await modeOf(dir)).toBe(0o700)
    const files = await keyFiles()
    expect(files).toHaveLength(1)
    expect(await modeOf(join(dir, files[0]!))).toBe(0o600)
    const [info] = store.list()
    expect(info).toMatchObject({ alg: 'EdDSA', status: 'active' })
    expect(files[0]).toBe(`${info!.kid}.json`)
    expect(store.active().kid).toBe(info!.kid)
  })

  it('writes the documented file format', async () => {
    const store = await KeyStore.open(dir)
    const kid = store.active().kid
    const file = JSON.parse(await readFile(join(dir, `${kid}.json`), 'utf8'))
    expect(file).toMatchObject({ kid, alg: 'EdDSA', status: 'active' })
    expect(new Date(file.created).toISOString()).toBe(file.created)
    expect(file.privateJwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519' })
    expect(typeof file.privateJwk.d).toBe('string')
    expect(file.publicJwk.d).toBeUndefined()
    expect(file.publicJwk.x).toBe(file.privateJwk.x)
  })

  it('reuses existing keys instead of creating more', async () => {
    const first = await KeyStore.open(dir)
    const second = await KeyStore.open(dir)
    expect(second.list()).toEqual(first.list())
    expect(await keyFiles()).toHaveLength(1)
  })

  it('never exposes private material in list() or jwks()', async () => {
    const store = await KeyStore.open(dir)
    expect(Object.keys(store.list()[0]!).sort()).toEqual(['alg', 'created', 'kid', 'status'])
    const { keys } = store.jwks()
    expect(keys).toHaveLength(1)
    expect(keys[0]).toMatchObject({ kid: store.active().kid, alg: 'EdDSA', use: 'sig', kty: 'OKP', crv: 'Ed25519' })
    expect(keys[0]!.d).toBeUndefined()
  })

  it('ignores temp files and unrelated entries', async () => {
    await mkdir(dir, { mode: 0o700 })
    await writeFile(join(dir, '.abc.123.tmp'), 'half a key', { mode: 0o600 })
    await writeFile(join(dir, 'README'), 'notes', { mode: 0o600 })
    await writeFile(join(dir, '.hidden.json'), 'editor backup', { mode: 0o600 })
    await writeFile(join(dir, 'not a kid.json'), 'stray', { mode: 0o600 })
    const store = await KeyStore.open(dir)
    expect(store.list()).toHaveLength(1)
  })
})

describe('permissions and bad files', () => {
  it('refuses a key file readable by group or other, naming the file', async () => {
    const kid = (await KeyStore.open(dir)).active().kid
    const path = join(dir, `${kid}.json`)
    await chmod(path, 0o644)
    await expect(KeyStore.open(dir)).rejects.toThrow(`${path} has mode 0644 but holds signing keys; it must be accessible by its owner only (chmod 600 ${path})`)
  })

  it('refuses a key folder accessible by group or other', async () => {
    await KeyStore.open(dir)
    await chmod(dir, 0o755)
    await expect(KeyStore.open(dir)).rejects.toThrow(`${dir} has mode 0755 but holds signing keys; it must be accessible by its owner only (chmod 700 ${dir})`)
  })

  it('names a key file that is not JSON', async () => {
    await KeyStore.open(dir)
    await writeFile(join(dir, 'broken.json'), '{nope', { mode: 0o600 })
    await expect(KeyStore.open(dir)).rejects.toThrow(`key file ${join(dir, 'broken.json')} is not valid JSON`)
  })

  it('refuses a key file whose kid does not match its name', async () => {
    const kid = (await KeyStore.open(dir)).active().kid
    const text = await readFile(join(dir, `${kid}.json`), 'utf8')
    await writeFile(join(dir, 'other.json'), text, { mode: 0o600 })
    await expect(KeyStore.open(dir)).rejects.toThrow(`has kid "${kid}", which does not match its file name`)
  })

  it('refuses a key file whose public half belongs to another key', async () => {
    const store = await KeyStore.open(dir)
    const a = store.active().kid
    const b = (await store.rotate()).kid
    const fa = JSON.parse(await readFile(join(dir, `${a}.json`), 'utf8'))
    const fb = JSON.parse(await readFile(join(dir, `${b}.json`), 'utf8'))
    await writeFile(join(dir, `${a}.json`), JSON.stringify({ ...fa, publicJwk: fb.publicJwk }))
    await expect(KeyStore.open(dir)).rejects.toThrow('its public key does not match its private key')
  })

  it('fails closed in a running store once the folder turns bad, and recovers', async () => {
    const store = await KeyStore.open(dir, { checkIntervalMs: 0 })
    const path = join(dir, `${store.active().kid}.json`)
    await chmod(path, 0o640)
    await writeFile(join(dir, '.touch.tmp'), '') // bump the folder mtime even on coarse clocks
    await expect(store.refresh()).rejects.toThrow('has mode 0640')
    await expect(store.refresh()).rejects.toThrow('has mode 0640')
    await chmod(path, 0o600)
    await store.refresh()
    expect(store.active().kid).toBe(store.list()[0]!.kid)
  })
})

describe('a source that fails for a while', () => {
  it('is checked again by the very next call once a check failed, not after the interval', async () => {
    const folder = folderKeySource(dir)
    let away = false
    const source: KeySource = { ...folder, stamp: async () => { if (away) throw new Error('the ledger is away'); return await folder.stamp() } }
    // an hour between checks: only a failure may shorten it
    const store = await KeyStore.open(source, { checkIntervalMs: 3_600_000 })
    const kid = store.active().kid
    await store.reload()
    away = true
    await expect(store.reload()).rejects.toThrow('the ledger is away')
    await expect(store.refresh()).rejects.toThrow('the ledger is away')
    away = false
    await store.refresh()
    expect(store.active().kid).toBe(kid)
    // healthy again: the interval applies (a source that fails now is not asked within it)
    away = true
    await store.refresh()
  })
})

describe('rotate and retire', () => {
  it('rotate makes a new signing key and keeps the old one verifying', async () => {
    const store = await KeyStore.open(dir)
    const old = store.active().kid
    const info = await store.rotate()
    expect(info.kid).not.toBe(old)
    expect(store.active().kid).toBe(info.kid)
    expect(store.list().map(k => k.kid)).toEqual([old, info.kid])
    expect(store.verificationKey(old)).toBeDefined()
    expect(store.jwks().keys.map(k => k.kid)).toEqual([old, info.kid])
    for (const f of await keyFiles()) expect(await modeOf(join(dir, f))).toBe(0o600)
  })

  it('the newest key signs even when rotations share a millisecond', async () => {
    const fixed = new Date('2030-01-01T00:00:00.000Z')
    const store = await KeyStore.open(dir, { clock: () => fixed })
    const b = await store.rotate()
    const c = await store.rotate()
    expect(store.active().kid).toBe(c.kid)
    expect(Date.parse(c.created)).toBeGreaterThan(Date.parse(b.created))
    expect(b.kid.startsWith('20300101-')).toBe(true)
  })

  it('retire stops a key verifying and drops it from jwks', async () => {
    const store = await KeyStore.open(dir, { clock: () => new Date('2030-02-03T04:05:06.000Z') })
    const old = store.active().kid
    await store.rotate()
    const info = await store.retire(old)
    expect(info).toMatchObject({ kid: old, status: 'retired', retiredAt: '2030-02-03T04:05:06.000Z' })
    expect(store.verificationKey(old)).toBeUndefined()
    expect(store.jwks().keys.map(k => k.kid)).not.toContain(old)
    expect(store.info(old)?.status).toBe('retired')
    const file = JSON.parse(await readFile(join(dir, `${old}.json`), 'utf8'))
    expect(file.status).toBe('retired')
    expect(await modeOf(join(dir, `${old}.json`))).toBe(0o600)
  })

  it('retire of an unknown kid says so', async () => {
    const store = await KeyStore.open(dir)
    await expect(store.retire('nope')).rejects.toThrow(`no signing key "nope" in ${dir}`)
  })

  it('refuses to retire the only active key without rotating first', async () => {
    const store = await KeyStore.open(dir)
    const kid = store.active().kid
    await expect(store.retire(kid)).rejects.toThrow(`key ${kid} is the current signing key; run \`pind keys rotate\` first, then retire it`)
    expect(store.verificationKey(kid)).toBeDefined()
  })

  it('unknown kids have no verification key', async () => {
    const store = await KeyStore.open(dir)
    expect(store.verificationKey('missing')).toBeUndefined()
  })
})

describe('changes made by another process', () => {
  it('reload() picks up a rotation made through another instance', async () => {
    const admin = await KeyStore.open(dir)
    const server = await KeyStore.open(dir)
    const rotated = await admin.rotate()
    expect(server.active().kid).not.toBe(rotated.kid)
    await server.reload()
    expect(server.active().kid).toBe(rotated.kid)
  })

  it('refresh() notices the folder changed', async () => {
    const admin = await KeyStore.open(dir)
    const server = await KeyStore.open(dir, { checkIntervalMs: 0 })
    const old = server.active().kid
    const rotated = await admin.rotate()
    await server.refresh()
    expect(server.active().kid).toBe(rotated.kid)
    await admin.retire(old)
    await server.refresh()
    expect(server.verificationKey(old)).toBeUndefined()
  })

  it('refresh() checks no more than once per interval', async () => {
    const admin = await KeyStore.open(dir)
    const server = await KeyStore.open(dir, { checkIntervalMs: 60_000 })
    const old = server.active().kid
    await admin.rotate()
    await server.refresh()
    expect(server.active().kid).toBe(old)
  })
})
