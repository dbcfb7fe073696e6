/**
 * `pind blocks migrate --to s3` against the run's Ceph RADOS Gateway, on a
 * stopped data dir (a corrupt block stops it; Ctrl-C and a second run go on
 * from the journal) and under a running serve that goes on uploading and
 * switches to the bucket without a restart. Afterwards the data dir is served
 * from the bucket, refuses --blockstore fs, gc sweeps the bucket, and
 * export-ledger/import-ledger move the ledger to a new data dir on the same
 * bucket. Uploads with prepaid tickets, whose blocks go straight to the
 * store, run across a live switch on a slow disk (test/helpers/slow-disk.ts)
 * and are acknowledged only with every block in the bucket.
 */
import { createHash, randomBytes } from 'node:crypto'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { base32upper } from 'multiformats/bases/base32'
import { CID } from 'multiformats/cid'
import { FsBlockstore } from 'blockstore-fs'
import { NextToLast } from 'blockstore-fs/sharding'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid } from '../../scripts/peer/index.mjs'
import { diskBlocks, bucketKeys, newBucket, s3, S3_PREFIX } from '../helpers/backend.js'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { BUNDLE, runPind, spawnPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { startPindOnSlowDisk } from '../helpers/slow-disk.js'
import { openUpload } from '../helpers/ticket-upload.js'

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')
const env = (): Record<string, string> => ({ PIND_S3_ACCESS_KEY_ID: s3().accessKeyId, PIND_S3_SECRET_ACCESS_KEY: s3().secretAccessKey })
const target = (bucket: string): string[] => ['--s3-endpoint', s3().endpoint, '--s3-bucket', bucket, '--s3-force-path-style']

let chain: DevChain
beforeAll(async () => { chain = await startDevChain({ payers: 2 }) })
afterAll(async () => { await chain?.stop() })

async function upload (pind: PindProcess, payer: number, size: number): Promise<{ cid: string, hash: string }> {
  const bytes = randomBytes(size)
  const r = await payingFetch(chain, chain.payers[payer]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
  expect(r.status).toBe(201)
  return { cid: (await r.json() as any).cid, hash: sha(bytes) }
}

/** runs pind under a pseudo-terminal (util-linux script): what a terminal shows, and the exit code */
async function onTerminal (args: string[], extraEnv: Record<string, string>): Promise<{ code: number | null, out: string }> {
  const quote = (a: string): string => `'${a.replace(/'/g, "'\\''")}'`
  const p = spawn('script', ['-qec', [process.execPath, BUNDLE, ...args].map(quote).join(' '), '/dev/null'], { env: { ...process.env, PIND_LOG_LEVEL: 'warn', ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  p.stdout.on('data', (b: Buffer) => { out += b.toString() })
  p.stderr.on('data', (b: Buffer) => { out += b.toString() })
  const code = await new Promise<number | null>(resolve => p.on('exit', resolve))
  return { code, out }
}

async function served (pind: PindProcess, files: Array<{ cid: string, hash: string }>): Promise<void> {
  for (const f of files) {
    const r = await fetch(`${pind.url}/ipfs/${f.cid}`)
    expect(r.status).toBe(200)
    expect(sha(Buffer.from(await r.arrayBuffer()))).toBe(f.hash)
  }
}

describe('pind blocks migrate --to s3', () => {
  it('on a stopped data dir: refuses a corrupt block, resumes after Ctrl-C, verifies every block, then switches', async () => {
    const { args, env: chainEnv } = chainArgs(chain)
    const dataDir = tempDir()
    let pind = await startPind({ dataDir, args, env: chainEnv })
    const files = [await upload(pind, 0, 1_500_000), await upload(pind, 0, 300_000)]
    await pind.stop()
    // hundreds of small blocks no pin references: the migration copies them too, gc removes them later
    const disk = new FsBlockstore(join(dataDir, 'blocks'))
    await disk.open()
    for (let i = 0; i < 300; i++) {
      const b = randomBytes(700)
      await disk.put(rawCid(b), b)
    }
    const onDisk = diskBlocks(join(dataDir, 'blocks'))
    const bucket = await newBucket()
    const migrate = ['blocks', 'migrate', '--to', 's3', '--data-dir', dataDir, ...target(bucket)]

    // interrupted (Ctrl-C) once some blocks are journalled as verified: nothing is switched
    const first = spawnPind(migrate, { env: env() })
    let err = ''
    first.stderr?.on('data', (b: Buffer) => { err += b.toString() })
    const exited = new Promise<number | null>(resolve => first.on('exit', resolve))
    const journal = join(dataDir, 'blocks-migrate.journal')
    await waitFor(() => existsSync(journal) && readFileSync(journal, 'utf8').split('\n').length > 64 ? true : undefined, 'the journal to fill', 60_000)
    first.kill('SIGINT')
    expect(await exited).toBe(1)
    expect(err).toMatch(/interrupted; nothing was switched/)
    expect(existsSync(join(dataDir, 'blockstore.json'))).toBe(false)
    const journalled = readFileSync(journal, 'utf8').trim().split('\n').length - 1
    expect(journalled).toBeLessThan(onDisk)

    // a block file that does not hold what its name says stops the migration before the switch
    const liar = rawCid(randomBytes(100))
    await disk.put(liar, randomBytes(100))
    const refused = await runPind(migrate, { env: env() })
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(/1 block file\(s\) on disk do not match their hash/)
    expect(refused.err).toContain(new NextToLast().encode(liar).file.replace('.data', ''))
    expect(existsSync(join(dataDir, 'blockstore.json'))).toBe(false)
    await disk.delete(liar)

    // on a terminal it shows its progress (run under a pseudo-terminal; stdout and stderr share it)
    const done = await onTerminal([...migrate, '--json'], env())
    expect(done.code, done.out).toBe(0)
    expect(done.out).toMatch(/blocks migrate: copying: \d+ blocks seen, \d+ copied and verified \(/)
    // (the JSON follows the progress line's last erase, on the same terminal line)
    const json = done.out.split(/\r?\n/).find(l => l.includes('{"')) as string
    const result = JSON.parse(json.slice(json.indexOf('{"')))
    expect(result).toMatchObject({ via: 'data-dir', blocks: onDisk, bucket, prefix: S3_PREFIX, missingReferenced: 0 })
    expect(result.resumed).toBeGreaterThanOrEqual(journalled)
    expect(result.copied + result.resumed).toBe(onDisk)
    expect(existsSync(journal)).toBe(false)
    expect((await bucketKeys(bucket, S3_PREFIX)).length).toBe(onDisk)
    const record = JSON.parse(readFileSync(join(dataDir, 'blockstore.json'), 'utf8'))
    expect(record).toMatchObject({ backend: 's3', how: 'migrated', s3: { bucket, prefix: S3_PREFIX, endpoint: s3().endpoint, forcePathStyle: true } })
    expect(JSON.stringify(record)).not.toContain(s3().secretAccessKey)

    // the data dir now serves from the bucket: --blockstore fs is refused, the record is enough otherwise
    const wrong = await runPind(['serve', '--data-dir', dataDir, '--blockstore', 'fs', '--port', '0'], { env: env() })
    expect(wrong.code).toBe(2)
    expect(wrong.err).toMatch(/keeps its blocks in S3/)
    const again = await runPind(migrate, { env: env() })
    expect(again.code).toBe(1)
    expect(again.err).toMatch(/in S3 already/)
    // gc on the stopped data dir sweeps the bucket: the orphans go, the pinned blocks stay
    const gc = await runPind(['gc', '--json', '--data-dir', dataDir], { env: env() })
    expect(gc.code, gc.err).toBe(0)
    expect(JSON.parse(gc.out)).toMatchObject({ removedBlocks: 300, scannedBlocks: onDisk })
    // pind status of the stopped data dir counts the blocks in the bucket
    const status = await runPind(['status', '--json', '--data-dir', dataDir], { env: env() })
    expect(status.code, status.err).toBe(0)
    expect(JSON.parse(status.out).storage).toMatchObject({ blocks: onDisk - 300 })
    pind = await startPind({ dataDir, args, env: { ...chainEnv, ...env() } })
    try {
      expect(pind.stdout()).toMatch(/blocks:\s+blocks in S3 bucket/)
      await served(pind, files)
    } finally {
      await pind.stop()
    }
  })

  it('under a running serve: uploads go on, the serve switches to the bucket, and the ledger moves to a new data dir on it', async () => {
    const { args, env: chainEnv } = chainArgs(chain)
    const pind = await startPind({ args, env: chainEnv })
    const bucket = await newBucket()
    const files = [await upload(pind, 1, 2_500_000), await upload(pind, 1, 100_000)]
    // uploads go on while the bulk is copied (a few: each one is more to copy)
    let uploading = true
    const during = (async () => {
      for (let i = 0; i < 3 && uploading; i++) files.push(await upload(pind, 1, 1_100_000 + files.length))
    })()
    const r = await runPind(['blocks', 'migrate', '--to', 's3', '--json', '--data-dir', pind.dataDir, ...target(bucket)], { env: env() })
    expect(r.code, r.err).toBe(0)
    expect(JSON.parse(r.out)).toMatchObject({ via: 'serve', bucket })
    expect(r.err).toMatch(/via the running pind serve/)
    const diskAfterSwitch = diskBlocks(join(pind.dataDir, 'blocks'))
    const keysAtSwitch = (await bucketKeys(bucket, S3_PREFIX)).length
    files.push(await upload(pind, 1, 1_300_000)) // after the switch: into the bucket only
    uploading = false
    await during
    expect(diskBlocks(join(pind.dataDir, 'blocks'))).toBe(diskAfterSwitch)
    expect((await bucketKeys(bucket, S3_PREFIX)).length).toBeGreaterThan(keysAtSwitch)
    await served(pind, files)
    const dry = JSON.parse((await runPind(['gc', '--dry-run', '--json', '--data-dir', pind.dataDir])).out)
    expect(dry).toMatchObject({ removedBlocks: 0, scannedBlocks: dry.markedBlocks })
    expect((await bucketKeys(bucket, S3_PREFIX)).length).toBe(dry.markedBlocks)
    expect(pind.stderr()).toMatch(/this serve now keeps its blocks in S3/)
    expect(pind.stderr()).not.toContain(s3().secretAccessKey)

    // export-ledger with the blocks' list, import into a fresh data dir served from the same bucket
    const exportFile = join(tempDir(), 'ledger.jsonl')
    expect((await runPind(['export-ledger', '--with-blocks', '-o', exportFile, '--data-dir', pind.dataDir])).code).toBe(0)
    await pind.stop()
    const moved = join(tempDir(), 'moved')
    const imported = await runPind(['import-ledger', exportFile, '--json', '--data-dir', moved])
    expect(imported.code, imported.err).toBe(0)
    const next = await startPind({ dataDir: moved, args: [...args, '--blockstore', 's3', ...target(bucket)], env: { ...chainEnv, ...env() } })
    try {
      await served(next, files)
      const after = JSON.parse((await runPind(['gc', '--dry-run', '--json', '--data-dir', moved])).out)
      expect(after).toMatchObject({ removedBlocks: 0, markedBlocks: dry.markedBlocks, scannedBlocks: dry.markedBlocks })
    } finally {
      await next.stop()
    }
  })
})

describe('pind blocks migrate --to s3 beside uploads with prepaid tickets', () => {
  it('a ticket upload streamed across the live switch is acknowledged only with every block in the bucket (slow disk)', async () => {
    const { args, env: chainEnv } = chainArgs(chain)
    // every fdatasync takes 150 ms longer: a ticket upload's block write to blocks/ (written,
    // fdatasync'd, renamed) is under way for that long, and the switch happens meanwhile
    const pind = await startPindOnSlowDisk(150, { args, env: chainEnv })
    try {
      const files = [await upload(pind, 0, 600_000)]
      const bucket = await newBucket()
      const MiB = 1024 * 1024
      const PIECE = 256 * 1024
      const TICKET_BYTES = 64 * MiB
      const tickets: Array<{ ticket: string, token: string }> = []
      for (const payer of [0, 1, 0]) {
        const r = await payingFetch(chain, chain.payers[payer]!.privateKey)(`${pind.url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': String(TICKET_BYTES) } })
        expect(r.status).toBe(201)
        tickets.push({ ticket: ((await r.json()) as any).ticket, token: r.headers.get('x-wallet-auth-token') as string })
      }
      // three uploads, each a quarter MiB every 40 ms (a block written every ~160 ms), from before the
      // migration starts until a MiB after it has switched. Past 12 MiB each, a quarter MiB every
      // 400 ms: the bulk copy chases what the uploads add, and on a loaded machine it must still
      // catch up before a ticket's bytes run out (while each connection stays far from the idle timeout)
      let switched = false
      const streams = tickets.map(async (t) => {
        const u = openUpload(pind.url, { 'x-upload-ticket': t.ticket, authorization: `Bearer ${t.token}` })
        const hash = createHash('sha256')
        let sent = 0
        let after = 0
        while (after < 4) {
          if (sent + PIECE > TICKET_BYTES) throw new Error('the ticket\'s bytes ran out before the migration switched')
          const piece = randomBytes(PIECE)
          hash.update(piece)
          await u.write(piece)
          sent += PIECE
          if (switched) after++
          await new Promise(resolve => setTimeout(resolve, sent < 12 * MiB ? 40 : 400))
        }
        u.end()
        const r = await u.response
        return { status: r.status, body: r.body, hash: hash.digest('hex'), sent }
      })
      await waitFor(() => diskBlocks(join(pind.dataDir, 'blocks')) >= 8 ? true : undefined, 'ticket uploads\' blocks on disk')
      const migrated = await runPind(['blocks', 'migrate', '--to', 's3', '--json', '--data-dir', pind.dataDir, ...target(bucket)], { env: env() })
      switched = true
      expect(migrated.code, migrated.err).toBe(0)
      expect(JSON.parse(migrated.out)).toMatchObject({ via: 'serve', bucket, missingReferenced: 0 })
      const uploads = await Promise.all(streams)
      for (const u of uploads) expect(u.status, JSON.stringify(u.body)).toBe(201)

      // every block of every acknowledged pin is in the bucket …
      const inBucket = new Set((await bucketKeys(bucket, S3_PREFIX)).map(k => k.slice(S3_PREFIX.length)))
      const exported = await runPind(['export-ledger', '--with-blocks', '--records', 'pins', '--data-dir', pind.dataDir])
      expect(exported.code, exported.err).toBe(0)
      const pins = exported.out.trim().split('\n').map(l => JSON.parse(l)).filter(l => l.type === 'pin')
      for (const u of uploads) {
        const blocks = pins.find(p => p.requestid === u.body.requestid)?.blocks as string[]
        expect(blocks.length).toBeGreaterThanOrEqual(Math.floor(u.sent / MiB))
        const missing = blocks.filter(b => !inBucket.has(base32upper.encode(CID.parse(b).multihash.bytes)))
        expect(missing, `blocks of pin ${String(u.body.requestid)} left on disk only`).toEqual([])
      }
      // … and the gateway, now reading from the bucket, serves each file byte for byte
      await served(pind, [...files, ...uploads.map(u => ({ cid: u.body.cid as string, hash: u.hash }))])
      expect(pind.stderr()).toMatch(/this serve now keeps its blocks in S3/)
    } finally {
      await pind.stop()
    }
  }, 240_000)
})

describe('S3 settings', () => {
  it('takes credentials from the environment or a 0600 file only, and never shows them', async () => {
    const bucket = await newBucket()
    const dataDir = tempDir()
    const serve = ['serve', '--data-dir', dataDir, '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0', '--blockstore', 's3', ...target(bucket)]
    const none = await runPind(serve)
    expect(none.code).toBe(2)
    expect(none.err).toMatch(/S3 credentials are missing/)
    const file = join(tempDir(), 's3.credentials')
    writeFileSync(file, `[default]\naws_access_key_id = ${s3().accessKeyId}\naws_secret_access_key = ${s3().secretAccessKey}\n`, { mode: 0o644 })
    const open = await runPind([...serve, '--s3-credentials-file', file])
    expect(open.code).toBe(2)
    expect(open.err).toMatch(/must not be readable by group or others/)
    const wrong = await runPind(serve, { env: { PIND_S3_ACCESS_KEY_ID: s3().accessKeyId, PIND_S3_SECRET_ACCESS_KEY: 'x' + s3().secretAccessKey.slice(1) } })
    expect(wrong.code).toBe(2)
    expect(wrong.err).toMatch(/cannot be used: HTTP 403/)
    const secretInFile = join(tempDir(), 'config.json')
    writeFileSync(secretInFile, JSON.stringify({ s3SecretAccessKey: s3().secretAccessKey }))
    const inConfig = await runPind([...serve, '--config', secretInFile], { env: env() })
    expect(inConfig.code).toBe(2)
    expect(inConfig.err).toMatch(/"s3SecretAccessKey" is a secret/)
    for (const r of [none, open, wrong, inConfig]) {
      expect(r.err + r.out).not.toContain(s3().secretAccessKey)
      expect(r.err + r.out).not.toContain('x' + s3().secretAccessKey.slice(1))
    }
    const { chmodSync } = await import('node:fs')
    chmodSync(file, 0o600)
    // config show says the environment's credentials are set, never what they are
    const shown = await runPind(['config', 'show', '--json', '--data-dir', dataDir, '--blockstore', 's3', ...target(bucket)], { env: env() })
    expect(shown.code, shown.err).toBe(0)
    const rows = JSON.parse(shown.out).settings as Array<{ key: string, value: unknown, from: string }>
    expect(rows.find(r => r.key === 's3SecretAccessKey')).toMatchObject({ value: '(set; hidden)', from: 'PIND_S3_SECRET_ACCESS_KEY' })
    expect(rows.find(r => r.key === 's3AccessKeyId')).toMatchObject({ value: '(set; hidden)', from: 'PIND_S3_ACCESS_KEY_ID' })
    expect(rows.find(r => r.key === 's3Bucket')).toMatchObject({ value: bucket })
    expect(shown.out + shown.err).not.toContain(s3().secretAccessKey)
    expect(shown.out + shown.err).not.toContain(s3().accessKeyId)
    const pind = await startPind({ dataDir, args: ['--blockstore', 's3', ...target(bucket), '--s3-credentials-file', file, '--log-level', 'debug'] })
    try {
      expect((await (await fetch(`${pind.url}/health`)).json() as any).checks.blockstore.ok).toBe(true)
      // nothing public names the credentials (or the bucket's endpoint)
      for (const path of ['/.well-known/agent.json', '/.well-known/agent-card.json', '/openapi.json', '/health']) {
        const text = await (await fetch(`${pind.url}${path}`)).text()
        expect(text, path).not.toContain(s3().secretAccessKey)
        expect(text, path).not.toContain(s3().accessKeyId)
        expect(text, path).not.toContain(s3().endpoint)
      }
    } finally {
      await pind.stop()
    }
    expect(pind.stderr() + pind.stdout()).not.toContain(s3().secretAccessKey)
    // the data dir is recorded for that bucket and prefix
    const other = await runPind(['serve', '--data-dir', dataDir, '--port', '0', '--blockstore', 's3', ...target(await newBucket())], { env: env() })
    expect(other.code).toBe(2)
    expect(other.err).toMatch(/keeps its blocks in S3 bucket .*, not/)
    const prefix = await runPind([...serve, '--s3-prefix', 'elsewhere/'], { env: env() })
    expect(prefix.code).toBe(2)
    expect(prefix.err).toMatch(/under the prefix "blocks\/", not "elsewhere\/"/)
  })

  it('refuses --blockstore s3 on a data dir that keeps blocks on disk, and names the migration', async () => {
    const { args, env: chainEnv } = chainArgs(chain)
    const pind = await startPind({ args, env: chainEnv })
    await upload(pind, 0, 5000)
    await pind.stop()
    const r = await runPind(['serve', '--data-dir', pind.dataDir, '--port', '0', '--blockstore', 's3', ...target(await newBucket())], { env: env() })
    expect(r.code).toBe(2)
    expect(r.err).toMatch(/pind blocks migrate --to s3/)
    const missing = await runPind(['serve', '--data-dir', tempDir(), '--port', '0', '--blockstore', 's3', ...target('no-such-bucket-here')], { env: env() })
    expect(missing.code).toBe(2)
    expect(missing.err).toMatch(/bucket does not exist/)
  })
})
