/**
 * What `pind serve` records of its configuration in the ledger, so that an
 * admin command on a stopped data dir acts as that serve would (mints tokens
 * it accepts, sweeps with its grace, reports its provide schedule). Typed
 * accessors over the ledger's meta entries: nothing outside this folder reads
 * or writes them by name.
 */
import type { LedgerEnv } from './open.js'
import type { RecordedSettings } from '../ledger.js'

export type { RecordedSettings } from '../ledger.js'

const TYPES: { [K in keyof RecordedSettings]: 'string' | 'number' } = {
  tokenIssuer: 'string',
  tokenTtl: 'number',
  expiryGrace: 'number',
  provideStrategy: 'string',
  reprovideInterval: 'number'
}

/** What the last serve recorded (a value of the wrong type reads as absent). */
export function recordedSettings (env: LedgerEnv): Partial<RecordedSettings> {
  const out: Record<string, unknown> = {}
  for (const [key, type] of Object.entries(TYPES)) {
    const v = env.fact(key)
    if (typeof v === type) out[key] = v
  }
  return out as Partial<RecordedSettings>
}

/** Records serve's settings, all in one transaction. */
export async function recordSettings (env: LedgerEnv, s: RecordedSettings): Promise<void> {
  await env.transaction(() => {
    for (const key of Object.keys(TYPES) as Array<keyof RecordedSettings>) void env.setFact(key, s[key])
  })
}

/** The ledger's schema version (a read that proves the ledger answers: /health). */
export function schemaVersion (env: LedgerEnv): unknown {
  return env.fact('schemaVersion')
}
