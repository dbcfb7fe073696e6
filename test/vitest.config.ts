import { defineConfig } from 'vitest/config'

/**
 * Two projects. `fs`: every test, blocks on disk. `s3`: the tests that must hold
 * for both block backends, run again with PIND_TEST_BLOCKSTORE=s3 (see
 * test/helpers/backend.ts), plus the S3-only tests in test/s3/, against one real
 * Ceph RADOS Gateway started for the whole run (test/helpers/s3-server.ts).
 */
const BOTH_BACKENDS = [
  'test/e2e/upload.test.ts',
  'test/e2e/upload-car.test.ts',
  'test/e2e/upload-ticket.test.ts',
  'test/e2e/pins-by-cid.test.ts',
  'test/e2e/gc-concurrent.test.ts',
  'test/e2e/gc-auto.test.ts',
  'test/e2e/crash.test.ts',
  'test/e2e/settle-uncertain.test.ts',
  'test/http/gateway/*.test.ts',
  'test/unit/service/gc.test.ts'
]

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    setupFiles: ['test/helpers/setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'fs', include: ['test/**/*.test.ts'], exclude: ['test/s3/**'] } },
      {
        extends: true,
        test: {
          name: 's3',
          include: [...BOTH_BACKENDS, 'test/s3/**/*.test.ts'],
          env: { PIND_TEST_BLOCKSTORE: 's3' },
          globalSetup: ['test/helpers/s3-server.ts']
        }
      }
    ]
  }
})
