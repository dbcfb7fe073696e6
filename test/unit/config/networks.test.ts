/**
 * The `networks` setting (config/networks.ts, docs/networks.md): entries from
 * the config file or PIND_NETWORKS beside the single-network flags, each bad
 * entry a start-up error naming it, settler keys only by reference and never
 * echoed.
 */
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src/config/load.js'
import { paymentNetworks } from '../../../src/config/networks.js'
import { tempDir } from '../../helpers/pind.js'

const A = '0x' + '11'.repeat(20)
const B = '0x' + '22'.repeat(20)
const KEY = '0x' + 'ab'.repeat(32)
const base = { network: 'eip155:8453', asset: A, payTo: B, rpcUrl: 'http://127.0.0.1:8545', settlerKeyEnv: 'PIND_BASE_KEY' }

function load (file: unknown, env: Record<string, string> = {}, flags: Record<string, unknown> = {}): ReturnType<typeof loadConfig> {
  const dir = tempDir()
  const path = join(dir, 'pind.json')
  writeFileSync(path, JSON.stringify(file))
  return loadConfig({ flags, env, configFile: path, scope: 'serve' })
}

describe('the networks setting', () => {
  it('adds networks after the single-network settings, which stay the first entry', () => {
    const { config, errors } = load({ networks: [base] }, { PIND_BASE_KEY: KEY, PIND_SETTLER_KEY: KEY }, { payTo: A, rpcUrl: 'http://127.0.0.1:1' })
    expect(errors).toEqual([])
    const all = paymentNetworks(config!)
    expect(all.map(n => n.network)).toEqual(['eip155:167000', 'eip155:8453'])
    expect(all[1]).toMatchObject({ asset: A, payTo: B, assetName: 'USD Coin', assetVersion: '2', settlerKeyEnv: 'PIND_BASE_KEY' })
  })

  it('takes PIND_NETWORKS as JSON, and works without the single-network flags', () => {
    const { config, errors } = loadConfig({ flags: {}, env: { PIND_NETWORKS: JSON.stringify([{ network: 'eip155:8453', asset: A, payTo: B, facilitatorUrl: 'https://f.example' }]) }, scope: 'serve' })
    expect(errors).toEqual([])
    expect(paymentNetworks(config!).map(n => [n.network, n.facilitatorUrl])).toEqual([['eip155:8453', 'https://f.example']])
  })

  it('names the bad entry and what is wrong with it', () => {
    const cases: Array<[unknown, RegExp]> = [
      [[{ ...base, network: 'base' }], /entry 1 \(base\): network: expected a CAIP-2 EVM network id/],
      [[{ ...base, payTo: '0x12' }], /entry 1 \(eip155:8453\): payTo: expected a 0x-prefixed 20-byte hex address/],
      [[{ network: 'eip155:8453', asset: A }], /entry 1 \(eip155:8453\): "payTo" is required/],
      [[{ ...base, color: 'blue' }], /entry 1 \(eip155:8453\): unknown field "color"/],
      [[{ network: 'eip155:8453', asset: A, payTo: B }], /entry 1 \(eip155:8453\): no way to settle/],
      [[{ ...base, rpcUrl: undefined }], /entry 1 \(eip155:8453\): the embedded facilitator \(a settler key\) needs "rpcUrl"/],
      [[base, { ...base, settlerKeyEnv: undefined, settlerKeyFile: '/nope', settlerMinBalance: 'lots' }], /entry 2 \(eip155:8453\): settlerMinBalance: expected a whole number/],
      [{ network: 'eip155:8453' }, /expected a JSON array of network entries/],
      [['eip155:8453'], /entry 1: expected an object/]
    ]
    for (const [networks, message] of cases) {
      const { config, errors } = load({ networks }, { PIND_BASE_KEY: KEY })
      expect(config, JSON.stringify(networks)).toBeUndefined()
      expect(errors.join('\n')).toMatch(message)
    }
  })

  it('refuses a network configured twice, naming both entries', () => {
    const { errors } = load({ networks: [base, { ...base, payTo: A }] }, { PIND_BASE_KEY: KEY })
    expect(errors.join('\n')).toMatch(/networks entry 2 \(eip155:8453\): eip155:8453 is configured twice \(also networks entry 1/)
    const flags = load({ networks: [{ ...base, network: 'eip155:167000' }] }, { PIND_BASE_KEY: KEY, PIND_SETTLER_KEY: KEY }, { payTo: A, rpcUrl: 'http://127.0.0.1:1' })
    expect(flags.errors.join('\n')).toMatch(/networks entry 1 \(eip155:167000\): eip155:167000 is configured twice \(also --network eip155:167000/)
  })

  it('never reads a settler key from configuration, and never echoes one', () => {
    const { errors } = load({ networks: [{ ...base, settlerKey: KEY }] })
    expect(errors.join('\n')).toMatch(/"settlerKey" is a secret and is never read from configuration/)
    expect(errors.join('\n')).not.toContain('abab')
    // a variable that holds no key is named, its value is not shown
    const bad = load({ networks: [base] }, { PIND_BASE_KEY: 'not-a-key-abab' })
    expect(bad.errors.join('\n')).toMatch(/the environment variable PIND_BASE_KEY does not hold a 32-byte hex private key/)
    expect(bad.errors.join('\n')).not.toContain('not-a-key')
    const unset = load({ networks: [base] })
    expect(unset.errors.join('\n')).toMatch(/the environment variable PIND_BASE_KEY \("settlerKeyEnv"\) is not set/)
  })

  it('wants a settler key file readable by its owner only', () => {
    const dir = tempDir()
    const keyFile = join(dir, 'base.key')
    writeFileSync(keyFile, KEY)
    chmodSync(keyFile, 0o644)
    const entry = { ...base, settlerKeyEnv: undefined, settlerKeyFile: keyFile }
    expect(load({ networks: [entry] }).errors.join('\n')).toMatch(/networks entry 1 \(eip155:8453\): settler key file .* must not be readable by group or others/)
    chmodSync(keyFile, 0o600)
    expect(load({ networks: [entry] }).errors).toEqual([])
    expect(load({ networks: [{ ...entry, settlerKeyFile: join(dir, 'missing') }] }).errors.join('\n')).toMatch(/cannot read settler key file .*missing: ENOENT/)
  })
})
