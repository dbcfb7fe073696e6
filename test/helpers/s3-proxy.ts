/**
 * A loopback proxy in front of an S3 endpoint (the run's Ceph RADOS Gateway:
 * test/helpers/s3-server.ts) that answers 503 SlowDown, what S3 sends when it
 * throttles, to as many of the next requests as the test asks (their bodies
 * read first), passes the rest on, and tells the test of every request.
 */
import { createServer, request, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ThrottlingProxy {
  /** the proxy's endpoint: http://127.0.0.1:<port> */
  endpoint: string
  /** how many of the next requests get 503 SlowDown */
  failNext: number
  close(): Promise<void>
}

const SLOW_DOWN = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>'

export async function startThrottlingProxy (upstreamEndpoint: string, onRequest: (req: IncomingMessage) => void = () => {}): Promise<ThrottlingProxy> {
  const upstream = new URL(upstreamEndpoint)
  const server = createServer((req, res) => {
    onRequest(req)
    if (proxy.failNext > 0) {
      proxy.failNext--
      req.resume()
      req.on('end', () => {
        res.writeHead(503, { 'content-type': 'application/xml' })
        res.end(SLOW_DOWN)
      })
      return
    }
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    out.on('error', () => { res.destroy() })
    req.pipe(out)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const proxy: ThrottlingProxy = {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    failNext: 0,
    close: async () => {
      server.closeAllConnections()
      await new Promise(resolve => server.close(resolve))
    }
  }
  return proxy
}
