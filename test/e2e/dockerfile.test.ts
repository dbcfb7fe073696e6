/**
 * The container image, built and run: the README's "Container" commands
 * (its first block), run with podman as they are written — `docker` becomes
 * `podman`, host ports are free ones on 127.0.0.1, the names are this test's
 * — on scripts/Dockerfile and the built dist/pind. This machine cannot pull,
 * so the Dockerfile's two bases are stand-ins built from the same Debian 12
 * packages (test/helpers/container.ts), passed as build args. Checked: the
 * image's user, ports, volume, entrypoint and stop signal; /health through
 * the published port; libp2p answering on the published p2p port; the
 * volume's data dir and ledger owned by uid 65532 and private (0700, 0600);
 * `pind status` by exec; a clean exit (0, in time) on `stop`, which sends
 * SIGTERM. Skipped, saying why, without podman and runc (.ci/run installs
 * them).
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { containerUnavailable, ensureStandIns, mustPodman, podman, runtimeFlags, STANDIN_BASE, STANDIN_LAYOUT } from '../helpers/container.js'
import { BINARY, ROOT } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

const unavailable = containerUnavailable() ?? (existsSync(BINARY) ? undefined : 'dist/pind is not built (npm run build)')
const suffix = `${process.pid}-${Date.now().toString(36)}`
const tag = `localhost/pind-test:${suffix}`
const name = `pind-test-${suffix}`
const volume = `pind-test-data-${suffix}`
let httpPort = 0
let p2pPort = 0

/** The README's first sh block under "### Container", one command per line. */
function readmeCommands (): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('\n### Container\n'))
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1]
  if (block == null) throw new Error('README has no sh block under "### Container"')
  return block.trim().split('\n').map(l => l.trim())
}

/** A README line as this test runs it: podman, this machine's runtime flags, the stand-in bases, its own names and ports. */
function adapt (line: string): string[] {
  const cmd = line.startsWith('npm run build && ') ? line.slice('npm run build && '.length) : line
  const t = cmd.split(/\s+/)
  const swap = (from: string, to: string): void => {
    const i = t.lastIndexOf(from)
    if (i < 0) throw new Error(`README command "${line}" has no "${from}"`)
    t[i] = to
  }
  if (t[0] !== 'docker') throw new Error(`not a docker command: ${line}`)
  switch (t[1]) {
    case 'build':
      swap('pind', tag) // -t pind
      swap('dist', join(ROOT, 'dist'))
      return ['build', ...runtimeFlags(), '--pull=never', '--build-arg', `BASE=${STANDIN_BASE}`, '--build-arg', `LAYOUT_BASE=${STANDIN_LAYOUT}`, ...t.slice(2)]
    case 'run':
      swap('127.0.0.1:8080:8080', `127.0.0.1:${httpPort}:8080`)
      swap('4001:4001', `127.0.0.1:${p2pPort}:4001`) // the test publishes on loopback only
      swap('pind-data:/var/lib/pind', `${volume}:/var/lib/pind`)
      swap('pind', tag) // the image, last
      swap('pind', name) // --name pind
      return ['run', ...runtimeFlags(), ...t.slice(2)]
    case 'exec':
      t[2] = name
      return t.slice(1)
    case 'stop':
      swap('pind', name)
      return t.slice(1)
    default:
      throw new Error(`unexpected README command: ${line}`)
  }
}

const commands = unavailable == null ? readmeCommands() : []
const step = (verb: string): string => {
  const line = commands.find(l => new RegExp(`^(npm run build && )?docker ${verb} `).test(l))
  if (line == null) throw new Error(`README's container block has no "docker ${verb}" line`)
  return line
}

beforeAll(async () => {
  if (unavailable != null) return
  httpPort = await freePort()
  p2pPort = await freePort()
  ensureStandIns()
  for (const id of dangling()) danglingBefore.add(id)
}, 600_000)

/** the build's layout stage leaves an untagged image: this test's are removed, nobody else's */
const danglingBefore = new Set<string>()
const dangling = (): string[] => podman(['images', '-q', '--no-trunc', '--filter', 'dangling=true']).out.split('\n').filter(Boolean)

afterAll(() => {
  if (unavailable != null) return
  podman(['rm', '-f', '-t', '0', name])
  podman(['volume', 'rm', '-f', volume])
  podman(['rmi', '-f', tag])
  const left = dangling().filter(id => !danglingBefore.has(id))
  if (left.length > 0) podman(['rmi', ...left])
})

describe.skipIf(unavailable != null)(`the container image (scripts/Dockerfile, README "Container")${unavailable != null ? ` — SKIPPED: ${unavailable}` : ''}`, () => {
  it('the README block is build, run, curl /health, exec status, stop', () => {
    expect(commands.map(l => l.replace(/^npm run build && /, '').split(/\s+/).slice(0, 2).join(' '))).toEqual(['docker build', 'docker run', 'curl http://127.0.0.1:8080/health', 'docker exec', 'docker stop'])
    // the production command is the tested one with settings added
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    expect(readme).toContain(`${step('run').replace(/ pind$/, '')} \\\n  -e PIND_PUBLIC_URL=`)
  })

  it('builds from the README command: uid 65532, ports 8080 and 4001, the data dir as a volume, SIGTERM', () => {
    mustPodman(adapt(step('build')), { timeoutMs: 600_000 })
    const [image] = JSON.parse(mustPodman(['image', 'inspect', tag])) as Array<{ Config: Record<string, any> }>
    const c = image!.Config
    expect(c.User).toBe('65532:65532')
    expect(Object.keys(c.ExposedPorts).sort()).toEqual(['4001/tcp', '8080/tcp'])
    expect(Object.keys(c.Volumes)).toEqual(['/var/lib/pind'])
    expect(c.Entrypoint).toEqual(['/usr/local/bin/pind'])
    expect(c.Cmd).toEqual(['serve'])
    expect(c.StopSignal).toBe('SIGTERM')
    expect(c.Env).toEqual(expect.arrayContaining(['PIND_DATA_DIR=/var/lib/pind', 'PIND_HOST=0.0.0.0', 'PIND_P2P_LISTEN=/ip4/0.0.0.0/tcp/4001']))
  })

  it('runs from the README command: /health on the published port, libp2p on the p2p port, a private data dir in the volume', async () => {
    mustPodman(adapt(step('run')))
    await waitFor(async () => {
      const state = podman(['inspect', name, '--format', '{{.State.Status}}']).out.trim()
      if (state === 'exited') throw new Error(`the container exited: ${podman(['logs', name]).err}`)
      try {
        return (await fetch(`http://127.0.0.1:${httpPort}/health`)).status === 200 ? true : undefined
      } catch { return undefined }
    }, 'the container to answer /health', 60_000)
    expect(await (await fetch(`http://127.0.0.1:${httpPort}/health`)).json()).toMatchObject({ status: expect.any(String) })

    // libp2p answers multistream-select on the published p2p port (not just a forwarder accepting)
    const hello = Buffer.from('/multistream/1.0.0\n')
    const answer = await new Promise<string>((resolve, reject) => {
      const s = connect(p2pPort, '127.0.0.1', () => { s.write(Buffer.concat([Buffer.from([hello.length]), hello])) })
      let got = ''
      s.on('data', (d: Buffer) => {
        got += d.toString('latin1')
        if (got.includes('\n')) { resolve(got); s.destroy() }
      })
      s.on('error', reject)
      s.setTimeout(10_000, () => { reject(new Error('no answer on the p2p port')); s.destroy() })
    })
    expect(answer).toContain('/multistream/1.0.0')

    // the named volume holds the data dir: the image's user owns it, nobody else may read it
    const dir = mustPodman(['volume', 'inspect', volume, '--format', '{{.Mountpoint}}']).trim()
    const d = statSync(dir)
    expect([d.uid, d.gid, d.mode & 0o777]).toEqual([65532, 65532, 0o700])
    const ledger = statSync(join(dir, 'ledger.mdb'))
    expect([ledger.uid, ledger.mode & 0o777]).toEqual([65532, 0o600])
    for (const f of readdirSync(dir)) {
      const s = statSync(join(dir, f))
      expect({ f, uid: s.uid, others: s.mode & 0o077 }).toEqual({ f, uid: 65532, others: 0 })
    }
  })

  it('exec runs the admin commands as the same user on the same data dir', () => {
    const r = podman(adapt(step('exec')))
    expect(r.code, r.err).toBe(0)
    expect(r.out + r.err).toMatch(/pins/i)
  })

  it('stop sends SIGTERM and serve exits cleanly within the grace period', () => {
    const t0 = Date.now()
    mustPodman(adapt(step('stop')), { timeoutMs: 60_000 })
    const ms = Date.now() - t0
    expect(ms).toBeLessThan(30_000) // not killed when -t ran out
    expect(podman(['inspect', name, '--format', '{{.State.ExitCode}}']).out.trim()).toBe('0')
    const logs = podman(['logs', name])
    expect(logs.out + logs.err).toMatch(/"msg":"stopping","signal":"SIGTERM"/)
    expect(logs.out + logs.err).toMatch(/"msg":"stopped"/)
  })
})
