/**
 * `npm start` stopped with SIGTERM (a process manager, `timeout`, a CI job's
 * end), not only Ctrl-C: anvil and serve stop with it and free their ports
 * (issue 15, item 7).
 */
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
})
