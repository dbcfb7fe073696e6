/**
 * Addresses in the configuration whose EIP-55 checksum does not match: a
 * mistyped character in --pay-to would send every payment to an address
 * nobody holds. (payment/ does the hashing: viem stays there.)
 */
import type { Config } from '../config/settings.js'

const CHECKED: ReadonlyArray<[keyof Config, string]> = [['payTo', '--pay-to'], ['asset', '--asset']]

export async function checksumErrors (c: Readonly<Config>): Promise<string[]> {
  const present = CHECKED.filter(([k]) => typeof c[k] === 'string')
  if (present.length === 0) return []
  const { checksumMatches } = await import('../payment/address.js')
  return present.filter(([k]) => !checksumMatches(c[k] as string))
    .map(([k, flag]) => `invalid ${flag}: ${String(c[k])}: the case of its letters does not match its EIP-55 checksum, so a character is probably mistyped; check the address (an all-lowercase address is taken without the check)`)
}
