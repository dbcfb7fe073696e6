/**
 * Podman for the container test (test/e2e/dockerfile.test.ts), on a machine
 * that cannot pull images: the Dockerfile's two bases are replaced by local
 * stand-ins built from the Debian 12 packages the real ones are made of —
 * distroless cc (glibc, libgcc, libstdc++, libssl, tzdata, netbase; users
 * root, nobody, nonroot 65532) and debian:bookworm-slim's shell and
 * coreutils for the layout stage — fetched with `apt-get download` and
 * imported with `podman import`. Each is built once and then reused.
 *
 * This machine (a container itself) runs podman only with runc (crun refuses
 * its hybrid cgroup layout) and with rlimits no higher than its own (it has no
 * CAP_SYS_RESOURCE): runtimeFlags() carries both.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, chmodSync, chownSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const STANDIN_BASE = 'localhost/pind-standin-cc:bookworm'
export const STANDIN_LAYOUT = 'localhost/pind-standin-layout:bookworm'

const CC_PACKAGES = ['base-files', 'netbase', 'tzdata', 'libc6', 'libgcc-s1', 'libstdc++6', 'libssl3']
const LAYOUT_PACKAGES = ['base-files', 'dash', 'coreutils', 'libc6', 'libacl1', 'libattr1', 'libgmp10', 'libselinux1', 'libpcre2-8-0']

/** why the container test cannot run here, or undefined when it can */
export function containerUnavailable (): string | undefined {
  if (process.getuid?.() !== 0) return 'not root (the test uses rootful podman)'
  for (const tool of ['podman', 'runc', 'apt-get', 'dpkg-deb']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed (apt-get install podman runc)`
  }
  return undefined
}

export function podman (args: string[], opts: { timeoutMs?: number } = {}): { code: number | null, out: string, err: string } {
  const r = spawnSync('podman', args, { encoding: 'utf8', timeout: opts.timeoutMs ?? 300_000, maxBuffer: 64 * 1024 * 1024 })
  return { code: r.status, out: r.stdout ?? '', err: (r.stderr ?? '') + (r.error != null ? String(r.error) : '') }
}

export function mustPodman (args: string[], opts: { timeoutMs?: number } = {}): string {
  const r = podman(args, opts)
  if (r.code !== 0) throw new Error(`podman ${args.join(' ')} exited ${r.code}: ${r.err}`)
  return r.out
}

/** runc, and rlimits within this process's own (raising them needs CAP_SYS_RESOURCE) */
export function runtimeFlags (): string[] {
  const soft = (name: string): number | undefined => {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find(l => l.startsWith(name))
    const v = line?.slice(name.length).trim().split(/\s+/)[0]
    return v == null || v === 'unlimited' ? undefined : Number(v)
  }
  const nofile = Math.min(soft('Max open files') ?? 65536, 65536)
  const nproc = Math.min(soft('Max processes') ?? 4096, 4096)
  return ['--runtime', 'runc', '--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', `nproc=${nproc}:${nproc}`]
}

/** Builds the two stand-in bases unless they exist. */
export function ensureStandIns (): void {
  if (podman(['image', 'exists', STANDIN_BASE]).code !== 0) {
    importRootfs(STANDIN_BASE, CC_PACKAGES, (root) => {
      // distroless's users and the home of its nonroot user
      writeFileSync(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n')
      writeFileSync(join(root, 'etc/group'), 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n')
      mkdirSync(join(root, 'home/nonroot'), { recursive: true })
      chownSync(join(root, 'home/nonroot'), 65532, 65532)
      chmodSync(join(root, 'home/nonroot'), 0o700)
    })
  }
  if (podman(['image', 'exists', STANDIN_LAYOUT]).code !== 0) {
    importRootfs(STANDIN_LAYOUT, LAYOUT_PACKAGES, (root) => {
      if (!existsSync(join(root, 'bin/sh'))) symlinkSync('dash', join(root, 'bin/sh'))
    })
  }
}

function importRootfs (tag: string, packages: string[], finish: (root: string) => void): void {
  const work = mkdtempSync(join(tmpdir(), 'pind-standin-'))
  try {
    const debs = join(work, 'debs')
    const root = join(work, 'root')
    mkdirSync(debs)
    mkdirSync(root)
    const dl = spawnSync('apt-get', ['download', ...packages], { cwd: debs, encoding: 'utf8', timeout: 300_000 })
    if (dl.status !== 0) throw new Error(`apt-get download ${packages.join(' ')} failed: ${dl.stderr}`)
    for (const deb of readdirSync(debs).filter(f => f.endsWith('.deb'))) {
      const x = spawnSync('dpkg-deb', ['-x', join(debs, deb), root], { encoding: 'utf8' })
      if (x.status !== 0) throw new Error(`dpkg-deb -x ${deb} failed: ${x.stderr}`)
    }
    mkdirSync(join(root, 'tmp'), { recursive: true })
    chmodSync(join(root, 'tmp'), 0o1777)
    finish(root)
    const tar = spawnSync('sh', ['-c', `tar -C '${root}' -c . | podman import - '${tag}'`], { encoding: 'utf8', timeout: 300_000 })
    if (tar.status !== 0) throw new Error(`podman import ${tag} failed: ${tar.stderr}`)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
