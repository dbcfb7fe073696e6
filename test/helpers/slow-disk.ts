/**
 * A pind serve on a slow disk: the real bundle, run under strace with its
 * delay injection, so that every fdatasync(2) it makes (a block written to
 * blocks/, a staged upload, an LMDB commit, a journal flush) takes `syncMs`
 * longer, as on a busy or networked disk. Nothing in pind is changed or
 * mocked; only the system call waits. Only fdatasync stops the process
 * (--seccomp-bpf), so the rest runs at full speed.
 *
 * strace is the spawned process and pind its only child: `stop` ends pind by
 * its pid (strace ignores SIGTERM while its tracee runs) and waits for both.
 */
import { spawnSync } from 'node:child_process'
import { chmodSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BUNDLE, startPind, tempDir, type PindProcess, type StartOptions } from './pind.js'

export interface SlowDiskPind extends PindProcess {
  /** pind's own pid (`pid` is strace's) */
  servePid: number
}

export async function startPindOnSlowDisk (syncMs: number, opts: Omit<StartOptions, 'binary'> = {}): Promise<SlowDiskPind> {
  const strace = spawnSync('strace', ['-V'], { encoding: 'utf8' })
  if (strace.status !== 0) throw new Error('strace is missing: install it (Debian: apt-get install strace; .ci/run does)')
  const wrapper = join(tempDir('pind-slow-disk-'), 'pind')
  writeFileSync(wrapper, [
    '#!/bin/sh',
    `exec strace -f --seccomp-bpf -qq -o /dev/null -e trace=fdatasync -e inject=fdatasync:delay_enter=${syncMs}ms '${process.execPath}' '${BUNDLE}' "$@"`,
    ''
  ].join('\n'))
  chmodSync(wrapper, 0o755)
  const pind = await startPind({ ...opts, binary: wrapper })
  const children = readFileSync(`/proc/${pind.pid}/task/${pind.pid}/children`, 'utf8').trim().split(/\s+/).map(Number)
  if (children.length !== 1 || !(children[0]! > 0)) throw new Error(`strace (pid ${pind.pid}) should run exactly one pind, not ${JSON.stringify(children)}`)
  const servePid = children[0]!
  const exited = new Promise<number | null>(resolve => {
    if (pind.proc.exitCode != null) resolve(pind.proc.exitCode)
    else pind.proc.once('exit', resolve)
  })
  return {
    ...pind,
    servePid,
    stop: async (signal = 'SIGTERM') => {
      try { process.kill(servePid, signal) } catch {}
      return await exited
    }
  }
}
