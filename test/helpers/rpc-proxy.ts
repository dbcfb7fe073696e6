/**
 * A JSON-RPC pass-through in front of anvil that can lose an answer: armed
 * with `dropAfterSend`, it forwards the next eth_sendRawTransaction to the
 * chain (the transaction is mined) and then cuts the client's connection
 * instead of answering — an RPC that went away at the worst moment. With
 * `hang(true)` it takes requests and answers none until `hang(false)`
 * (then it forwards those it held) — an RPC that stopped answering. Armed
 * with `refuseSend`, it cuts the connection of the next eth_sendRawTransaction
 * without forwarding it (after `hold`, when given) — a transaction that was
 * signed but never sent. `onSend` runs a hook when the next
 * eth_sendRawTransaction comes, then forwards it as usual (something else
 * fails at the moment a payment settles).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RpcProxy {
  url: string
  /** cut the answer to the next eth_sendRawTransaction (after forwarding it); resolves with the transaction's hash once done */
  dropAfterSend(): Promise<string>
  /** cut the next eth_sendRawTransaction without forwarding it, once `hold` resolves; `seen`: it came, `cut`: it was cut */
  refuseSend(hold?: Promise<void>): { seen: Promise<void>, cut: Promise<void> }
  /** run `hook` when the next eth_sendRawTransaction comes, then forward it; resolves once it came */
  onSend(hook: () => void): Promise<void>
  /** stop answering (requests are accepted and held), or forward the held ones and answer again */
  hang(on: boolean): void
  close(): Promise<void>
}

export async function startRpcProxy (target: string): Promise<RpcProxy> {
  let armed: ((hash: string) => void) | undefined
  let refuse: { hold?: Promise<void>, seen: () => void, cut: () => void } | undefined
  let sendHook: (() => void) | undefined
  let hanging = false
  const held: Array<() => void> = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const calls = [JSON.parse(body.toString())].flat() as Array<{ method?: string }>
      if (refuse != null && calls.some(c => c.method === 'eth_sendRawTransaction')) {
        const r = refuse
        refuse = undefined
        r.seen()
        void (r.hold ?? Promise.resolve()).then(() => { res.socket?.destroy(); r.cut() })
        return
      }
      if (sendHook != null && calls.some(c => c.method === 'eth_sendRawTransaction')) {
        const hook = sendHook
        sendHook = undefined
        hook()
      }
      const cut = armed != null && calls.some(c => c.method === 'eth_sendRawTransaction')
      const forward = (): void => {
        fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
          .then(async (r) => {
            const text = await r.text()
            if (cut && armed != null) {
              const done = armed
              armed = undefined
              res.socket?.destroy()
              done(String(([JSON.parse(text)].flat()[0] as { result?: string })?.result))
              return
            }
            res.writeHead(r.status, { 'content-type': 'application/json' })
            res.end(text)
          }, () => { res.socket?.destroy() })
      }
      if (hanging) held.push(forward)
      else forward()
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    dropAfterSend: async () => await new Promise<string>(resolve => { armed = resolve }),
    refuseSend: (hold) => {
      const seen = Promise.withResolvers<void>()
      const cut = Promise.withResolvers<void>()
      refuse = { ...(hold != null ? { hold } : {}), seen: seen.resolve, cut: cut.resolve }
      return { seen: seen.promise, cut: cut.promise }
    },
    onSend: async (hook) => await new Promise<void>(resolve => { sendHook = () => { hook(); resolve() } }),
    hang: (on) => {
      hanging = on
      if (!on) for (const forward of held.splice(0)) forward()
    },
    close: async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) }
  }
}
