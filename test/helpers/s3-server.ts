/**
 * vitest globalSetup of the `s3` project: one throwaway Ceph RADOS Gateway
 * (scripts/s3/) for the whole run — each test file makes its own buckets —
 * stopped by the pids its script recorded when the run ends.
 */
import type { TestProject } from 'vitest/node'
import { startS3, type S3ServerInfo } from '../../scripts/s3/index.mjs'

declare module 'vitest' {
  export interface ProvidedContext {
    s3: Omit<S3ServerInfo, 'pids'>
  }
}

export default async function setup (project: TestProject): Promise<() => Promise<void>> {
  const s3 = await startS3({ quiet: false })
  const { client: _client, pids: _pids, ...info } = s3
  project.provide('s3', { endpoint: info.endpoint, accessKeyId: info.accessKeyId, secretAccessKey: info.secretAccessKey, region: info.region, forcePathStyle: true, dir: info.dir, monPort: info.monPort, rgwPort: info.rgwPort, startSeconds: info.startSeconds })
  return async () => { await s3.stop() }
}
