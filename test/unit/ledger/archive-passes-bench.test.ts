/**
 * scripts/bench-archive-passes.mjs at a small size: it bundles the archive of
 * this tree and of a git ref, runs each in a process of its own with serve's
 * malloc and heap settings, and prints RssAnon per pass and the ratio. The
 * figures at this size are noise (the full size runs from the script); this
 * checks that the script runs both sides through the real LedgerArchive and
 * reports them.
 */
import { spawnSync } from 'node:child_process'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))

it('runs archive passes of this tree and of a git ref and prints the growth per pass of each', () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts/bench-archive-passes.mjs'), '40', '2', '--against', 'HEAD'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 })
  expect(r.status, r.stderr).toBe(0)
  expect(r.stdout).toMatch(/^40 archive passes of 2 pins/m)
  expect(r.stdout).toMatch(/^HEAD +RssAnon [\d.]+ MiB after 10 passes, [\d.]+ MiB after 40: -?[\d.]+ KB per pass$/m)
  expect(r.stdout).toMatch(/^this tree +RssAnon [\d.]+ MiB after 10 passes, [\d.]+ MiB after 40: -?[\d.]+ KB per pass$/m)
  expect(r.stdout).toMatch(/^this tree \/ HEAD: -?([\d.]+|Infinity|NaN)x per pass$/m)
}, 150_000)
