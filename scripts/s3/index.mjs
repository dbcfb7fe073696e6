// A throwaway S3 server (single-node Ceph + RADOS Gateway on 127.0.0.1) for tests, benchmarks
// and `npm start -- --s3`: a Node front for ceph-rgw.sh (which installs the Debian packages
// when they are missing, as root). Types: index.d.mts.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'

export const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'ceph-rgw.sh')

/** Runs ceph-rgw.sh with these arguments; resolves with its stdout, rejects with its stderr's tail. */
export function runScript (args, { env = {}, quiet = true } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn('bash', [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } })
    let out = ''
    let err = ''
    p.stdout.on('data', (b) => { out += b })
    p.stderr.on('data', (b) => { err += b; if (!quiet) process.stderr.write(b) })
    p.on('error', reject)
    p.on('exit', (code) => {
      if (code === 0) resolve(out)
      else reject(new Error(`ceph-rgw.sh ${args.join(' ')} exited ${code}:\n${err.split('\n').slice(-25).join('\n')}`))
    })
  })
}

/** An S3 client for the server (path-style; checksums only where S3 requires them: Ceph 16 refuses the SDK's default trailers). */
export function s3Client (s3) {
  return new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED'
  })
}

/**
 * One more radosgw on the cluster in `dir` (same buckets and users), on a port of its own:
 * a test can stop and start it (an outage of that endpoint) without disturbing the others.
 */
export async function extraGateway (dir, name) {
  const info = JSON.parse(await runScript(['start-rgw', dir, name]))
  let running = true
  return {
    endpoint: info.endpoint,
    async stop () { if (running) { running = false; await runScript(['stop-rgw', dir, name]) } },
    async start () { if (!running) { await runScript(['start-rgw', dir, name]); running = true } }
  }
}

/**
 * Starts a cluster in a fresh temp dir (or `dir`). `storeSize`: memstore bytes (RAM, used as
 * data arrives). Returns the endpoint and credentials, and how to stop it (by the pids the
 * script recorded), to stop and start only radosgw (an outage), and to make buckets.
 */
export async function startS3 ({ dir, storeSize, quiet = true } = {}) {
  const home = dir ?? join(mkdtempSync(join(tmpdir(), 'pind-s3-')), 'c')
  const info = JSON.parse(await runScript(['start', home], { env: storeSize != null ? { S3_STORE_SIZE: String(storeSize) } : {}, quiet }))
  const client = s3Client(info)
  let stopped = false
  return {
    ...info,
    client,
    env: () => ({ PIND_S3_ACCESS_KEY_ID: info.accessKeyId, PIND_S3_SECRET_ACCESS_KEY: info.secretAccessKey }),
    async createBucket (name) {
      await client.send(new CreateBucketCommand({ Bucket: name }))
      return name
    },
    /** every key under a prefix (paginated) */
    async keys (bucket, prefix = '') {
      const keys = []
      let token
      do {
        const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }))
        for (const o of r.Contents ?? []) keys.push(o.Key)
        token = r.IsTruncated ? r.NextContinuationToken : undefined
      } while (token != null)
      return keys
    },
    /** empties and removes a bucket */
    async deleteBucket (name) {
      for (;;) {
        const r = await client.send(new ListObjectsV2Command({ Bucket: name }))
        if (!r.Contents?.length) break
        await client.send(new DeleteObjectsCommand({ Bucket: name, Delete: { Objects: r.Contents.map((o) => ({ Key: o.Key })), Quiet: true } }))
      }
      await client.send(new DeleteBucketCommand({ Bucket: name }))
    },
    /** kills radosgw only: the endpoint refuses connections until startGateway */
    async stopGateway () { await runScript(['stop-rgw', info.dir]) },
    async startGateway () { await runScript(['start-rgw', info.dir]) },
    async stop () {
      if (stopped) return
      stopped = true
      client.destroy()
      await runScript(['stop', info.dir])
      if (dir == null) rmSync(dirname(home), { recursive: true, force: true })
    }
  }
}
