/**
 * Where things live inside a data dir. One place, so nothing else builds paths by hand.
 */
import { join } from 'node:path'

export interface DataDirLayout {
  root: string
  ledger: string
  blocks: string
  /** per-import staging folders; committed blocks are renamed into `blocks` */
  staging: string
  keys: string
  identity: string
  lock: string
  adminSocket: string
  nativeCache: string
}

export function layout (root: string): DataDirLayout {
  return {
    root,
    ledger: join(root, 'ledger.mdb'),
    blocks: join(root, 'blocks'),
    staging: join(root, 'staging'),
    keys: join(root, 'keys'),
    identity: join(root, 'identity.key'),
    lock: join(root, 'serve.lock'),
    adminSocket: join(root, 'admin.sock'),
    nativeCache: join(root, '.native')
  }
}
