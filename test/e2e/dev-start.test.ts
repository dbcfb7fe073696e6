/**
 * `npm start` stopped with SIGTERM (a process manager, `timeout`, a CI job's
 * end), not only Ctrl-C: anvil and serve stop with it and free their ports
 * (issue 15, item 7).
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { alive, killLeftovers, served, startDev } from '../helpers/dev-start.js'
import { tempDir } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

afterAll(killLeftovers)

describe('npm start', () => {
  it('stops anvil and serve when npm gets SIGTERM', async () => {
    const dataDir = tempDir()
    const npm = startDev('npm', ['start', '--', '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0'], dataDir)
    const { url, servePid, chain } = await served(npm, dataDir, 'npm start to serve', 90_000)
    const anvilPid = chain.pid as number
    expect((await fetch(`${url}/health`)).status).toBe(200)
    expect(alive(servePid) && alive(anvilPid)).toBe(true)

    npm.kill('SIGTERM')
    await npm.exited
    await waitFor(() => !alive(servePid) && !alive(anvilPid) ? true : undefined, `serve (pid ${servePid}) and anvil (pid ${anvilPid}) to stop`, 20_000)
    await expect(fetch(`${url}/health`)).rejects.toThrow()
  })

  it('--postgres: the ledger in a throwaway PostgreSQL cluster, stopped and removed with the rest', async () => {
    const dataDir = tempDir()
    const npm = startDev('npm', ['start', '--', '--postgres', '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0'], dataDir)
    const { url, servePid, chain } = await served(npm, dataDir, 'npm start -- --postgres to serve', 90_000)
    const cluster = JSON.parse(readFileSync(join(dataDir, 'dev-postgres.json'), 'utf8')) as { url: string, dir: string }
    const postgresPid = Number(readFileSync(join(cluster.dir, 'postmaster.pid'), 'utf8').split('\n')[0])
    expect(alive(postgresPid)).toBe(true)
    expect(JSON.parse(readFileSync(join(dataDir, 'ledger.json'), 'utf8'))).toMatchObject({ backend: 'postgres', url: cluster.url })
    expect(existsSync(join(dataDir, 'ledger.mdb'))).toBe(false)
    expect((await fetch(`${url}/health`)).status).toBe(200)

    npm.kill('SIGTERM')
    await npm.exited
    await waitFor(() => !alive(servePid) && !alive(chain.pid as number) && !alive(postgresPid) ? true : undefined, 'serve, anvil and PostgreSQL to stop', 30_000)
    expect(existsSync(cluster.dir)).toBe(false)
  })
})
