/** Does serve listen (HTTP or libp2p) on anything but loopback? Then routing `none` deserves a warning. */
import { isIP } from 'node:net'
import { multiaddr } from '@multiformats/multiaddr'

export function listensBeyondLoopback (httpHost: string, p2pListen: string[]): boolean {
  return !isLoopbackHost(httpHost) || p2pListen.some(ma => {
    const first = multiaddr(ma).getComponents()[0]
    return first == null || first.value == null || !isLoopbackHost(first.value)
  })
}

function isLoopbackHost (host: string): boolean {
  if (host === 'localhost') return true
  if (isIP(host) === 4) return host.startsWith('127.')
  if (isIP(host) === 6) return host === '::1'
  return false
}
