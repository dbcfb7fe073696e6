import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src/config/load.js'
import { SETTINGS } from '../../../src/config/settings.js'
import { tempDir } from '../../helpers/pind.js'

describe('configuration', () => {
  it('uses defaults, then the file, then the environment, then flags', () => {
    const dir = tempDir()
    const file = join(dir, 'pind.json')
    writeFileSync(file, JSON.stringify({ port: 7000, host: '0.0.0.0', maxMonths: 12 }))
    const { config, errors } = loadConfig({ flags: { port: '9000' }, env: { PIND_HOST: '127.0.0.2' }, configFile: file, scope: 'serve' })
    expect(errors).toEqual([])
    expect(config?.port).toBe(9000)
    expect(config?.host).toBe('127.0.0.2')
    expect(config?.maxMonths).toBe(12)
    expect(config?.priceRate).toBe(100_000n)
    expect(config?.uploadMaxBytes).toBe(104_857_600)
  })

  it('reports one clear message per bad value', () => {
    const { config, errors } = loadConfig({
      flags: { port: '99999', logLevel: 'loud' },
      env: { PIND_PAY_TO: '0x12', PIND_PRICE_MIN: '-1', PIND_TOKEN_TTL: 'forever' },
      scope: 'serve'
    })
    expect(config).toBeUndefined()
    expect(errors).toHaveLength(5)
    expect(errors.join('\n')).toMatch(/--port: "99999": expected an integer from 0 to 65535/)
    expect(errors.join('\n')).toMatch(/--log-level: "loud": expected one of error, warn, info, debug/)
    expect(errors.join('\n')).toMatch(/PIND_PAY_TO: "0x12"/)
    expect(errors.join('\n')).toMatch(/PIND_PRICE_MIN/)
    expect(errors.join('\n')).toMatch(/PIND_TOKEN_TTL/)
  })

  it('never shows a secret in an error, and refuses secrets in the config file', () => {
    const dir = tempDir()
    const file = join(dir, 'pind.json')
    writeFileSync(file, JSON.stringify({ settlerKey: '0xabc', bogus: 1 }))
    const { errors } = loadConfig({ flags: {}, env: { PIND_SETTLER_KEY: 'not-a-key-but-secret' }, configFile: file, scope: 'serve' })
    const text = errors.join('\n')
    expect(text).not.toMatch(/not-a-key-but-secret/)
    expect(text).toMatch(/PIND_SETTLER_KEY: \(hidden\)/)
    expect(text).toMatch(/"settlerKey" is a secret/)
    expect(text).toMatch(/unknown setting "bogus"/)
  })

  it('refuses a settler key file readable by others', () => {
    const dir = tempDir()
    const key = join(dir, 'settler.key')
    writeFileSync(key, '0x' + '11'.repeat(32), { mode: 0o644 })
    const { errors } = loadConfig({ flags: { settlerKeyFile: key, rpcUrl: 'http://127.0.0.1:1' }, env: {}, scope: 'serve' })
    expect(errors.join('\n')).toMatch(/chmod 600/)
  })

  it('takes routing none (the default), dht, delegated or both, and refuses what cannot work', () => {
    expect(loadConfig({ flags: {}, env: {}, scope: 'serve' }).config?.routing).toEqual(['none'])
    const dht = loadConfig({ flags: { routing: 'dht', bootstrap: 'public,/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWDDe7yq3VAfmFkwyCitU1hQXPM6PMxbhtJSEmwb1WjgS2' }, env: {}, scope: 'serve' })
    expect(dht.errors).toEqual([])
    expect(dht.config).toMatchObject({ routing: ['dht'], dhtMode: 'auto', provideStrategy: 'roots', reprovideInterval: 22 * 3600, routingPrivateAddresses: false })
    expect(dht.config?.bootstrap).toHaveLength(2)
    const bad = loadConfig({ flags: { routing: 'none,dht', bootstrap: '/ip4/127.0.0.1/tcp/4001' }, env: { PIND_DHT_MODE: 'sometimes' }, scope: 'serve' }).errors.join('\n')
    expect(bad).toMatch(/--routing: "none,dht": none cannot be combined/)
    expect(bad).toMatch(/--bootstrap: .*ending in \/p2p\/<peer id>/)
    expect(bad).toMatch(/PIND_DHT_MODE: "sometimes": expected one of auto, client, server/)
    expect(loadConfig({ flags: { routing: 'delegated' }, env: {}, scope: 'serve' }).errors).toEqual(['--routing delegated needs --delegated-routing-url'])
    // (unused without dht: serve says so at start, so that PIND_ROUTING=none can override a config file naming bootstrap peers)
    expect(loadConfig({ flags: { bootstrap: 'public' }, env: {}, scope: 'serve' }).errors).toEqual([])
    expect(loadConfig({ flags: { routingPrivateAddresses: true, routing: 'dht,delegated', delegatedRoutingUrl: 'http://127.0.0.1:1' }, env: {}, scope: 'serve' }).config).toMatchObject({ routing: ['dht', 'delegated'], routingPrivateAddresses: true })
  })

  it('takes --s3-verify-reads (off by default) for every subcommand, and refuses a value that is not a boolean', () => {
    expect(loadConfig({ flags: {}, env: {}, scope: 'admin' }).config?.s3VerifyReads).toBe(false)
    expect(loadConfig({ flags: {}, env: { PIND_S3_VERIFY_READS: 'true' }, scope: 'admin' }).config?.s3VerifyReads).toBe(true)
    expect(loadConfig({ flags: { s3VerifyReads: true }, env: { PIND_S3_VERIFY_READS: 'false' }, scope: 'serve' }).config?.s3VerifyReads).toBe(true)
    expect(loadConfig({ flags: {}, env: { PIND_S3_VERIFY_READS: 'sometimes' }, scope: 'serve' }).errors.join('\n')).toMatch(/PIND_S3_VERIFY_READS: "sometimes"/)
  })

  it('names every flag after its setting key, so commander fills the right field', () => {
    for (const s of SETTINGS) {
      if (s.flag == null) continue
      const camel = (s.flag.split(' ')[0] as string).slice(2).replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase())
      expect(camel).toBe(s.key)
      expect(s.env).toMatch(/^PIND_[A-Z0-9_]+$/)
    }
  })
})

describe('the README', () => {
  it('documents every setting in its configuration table', async () => {
    const { readFileSync } = await import('node:fs')
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
    for (const s of SETTINGS) {
      expect(readme, s.env).toContain(`| \`${s.env}\` |`)
      if (s.flag != null) expect(readme, s.flag).toContain(`\`${s.flag.split(' ')[0]}\``)
    }
  })
})
