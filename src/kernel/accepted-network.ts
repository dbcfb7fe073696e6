/**
 * One accepted payment network's terms (docs/networks.md): the network, the EIP-3009 token
 * accepted on it with its EIP-712 domain, and who is paid. The configuration's entries
 * (config/networks.ts), the gate's terms (payment/lane.ts) and the discovery documents all
 * carry these; each adds its own (how it settles; nothing).
 */
export interface AcceptedNetwork<Address extends string = string> {
  /** CAIP-2, e.g. eip155:8453 */
  network: string
  /** the EIP-3009 token (USDC) accepted on it */
  asset: Address
  /** its EIP-712 domain name and version */
  assetName: string
  assetVersion: string
  payTo: Address
}
