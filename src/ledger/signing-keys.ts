/**
 * The token signing keys as a ledger several serves share keeps them, so a
 * wallet token one front end issues verifies on every other and a rotation,
 * retirement or revocation reaches them all (src/auth/keystore.ts reads them
 * again when `version` changes). Each key is its JSON as src/auth/key-file.ts
 * writes it, private half included: the database holds secrets then, as the
 * keys/ folder does for one serve.
 */
export interface SigningKeyRecords {
  /** every key, as written */
  all(): Promise<Array<{ kid: string, json: string }>>
  /** writes a key: a new one, or its new state (retired) */
  put(kid: string, json: string): Promise<void>
  /** changes whenever put writes */
  version(): Promise<string>
}
