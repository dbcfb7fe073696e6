/** EIP-55: a mixed-case address carries a checksum in the case of its letters. */
import { isAddress } from 'viem'

/** false when the address is mixed-case and its case does not match its EIP-55 checksum (all-lower or all-upper case carries none). */
export function checksumMatches (address: string): boolean {
  return isAddress(address, { strict: true })
}
