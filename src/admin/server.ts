/**
 * The admin channel of a running `serve`: HTTP over a Unix socket in the
 * data dir (mode 0600, so only the operator's user can connect), never on
 * the public port. Admin subcommands send their operation here when a serve
 * holds the data dir, and run it themselves when none does.
 */
import type { Logger } from '../log.js'
import { readJson } from '../http/json-body.js'
import { sendJson } from '../http/respond.js'
import { Router } from '../http/router.js'
import { createHttpServer } from '../http/server.js'
import { runKeysOp, type KeysAdminDeps, type KeysOp } from '../service/keys-admin.js'

export interface AdminServerDeps {
  keys: KeysAdminDeps
}

export interface AdminServer {
  close(): Promise<void>
}

export async function startAdminServer (socketPath: string, d: AdminServerDeps, log: Logger): Promise<AdminServer> {
  const router = new Router()
  router.add('GET', '/ping', ({ res }) => { sendJson(res, 200, { pid: process.pid }) })
  router.add('POST', '/keys', async ({ req, res }) => {
    sendJson(res, 200, await runKeysOp(await readJson(req) as KeysOp, d.keys))
  })
  const http = createHttpServer(router, log.child({ component: 'admin' }))
  await http.listenSocket(socketPath)
  return { close: async () => { await http.close(2000) } }
}
