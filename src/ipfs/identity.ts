/**
 * The node's libp2p identity: an Ed25519 key created once and kept in the
 * data dir (mode 0600), so the peer ID survives restarts.
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { PrivateKey } from '@libp2p/interface'

export async function loadOrCreateIdentity (file: string): Promise<PrivateKey> {
  if (existsSync(file)) return readIdentity(file)
  const key = await generateKeyPair('Ed25519')
  writeIdentity(file, key)
  return key
}

export function readIdentity (file: string): PrivateKey {
  try {
    return privateKeyFromProtobuf(readFileSync(file))
  } catch (err) {
    throw new Error(`cannot read libp2p identity ${file}: ${(err as Error).message}`)
  }
}

/** Atomically writes the key (temp file + rename), readable by the owner only. */
export function writeIdentity (file: string, key: PrivateKey): void {
  const tmp = `${file}.tmp-${process.pid}`
  writeFileSync(tmp, privateKeyToProtobuf(key), { mode: 0o600, flush: true })
  chmodSync(tmp, 0o600)
  renameSync(tmp, file)
}

export function peerIdOf (key: PrivateKey): string {
  return peerIdFromPrivateKey(key).toString()
}
