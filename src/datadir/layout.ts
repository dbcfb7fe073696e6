/**
 * Where things live inside a data dir. One place, so nothing else builds paths by hand.
 */
import { join } from 'node:path'

export interface DataDirLayout {
  root: string
  ledger: string
  /** removed pins and their payments, moved out of `ledger` (src/ledger/lmdb/archive.ts) */
  ledgerArchive: string
  /** where the ledger is when it is not ledger.mdb (a PostgreSQL database); see ledger-record.ts */
  ledgerRecord: string
  /** libp2p's own records (the peer store) when the ledger is a shared database: each front end keeps its own */
  peerStore: string
  blocks: string
  /** per-import staging folders; committed blocks are renamed into `blocks` (or PUT to the bucket) */
  staging: string
  /** which block backend this data dir uses (absent: blocks on disk); see blockstore-record.ts */
  blockstoreRecord: string
  /** the S3 backend's read cache (--s3-cache-size) */
  s3Cache: string
  /** the write journals of uploads with a ticket under way (ipfs/write-journal.ts) */
  directWrites: string
  /** what `pind blocks migrate` has copied and verified so far (resume) */
  migrateJournal: string
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
    ledgerArchive: join(root, 'ledger-archive.mdb'),
    ledgerRecord: join(root, 'ledger.json'),
    peerStore: join(root, 'peers.mdb'),
    blocks: join(root, 'blocks'),
    staging: join(root, 'staging'),
    blockstoreRecord: join(root, 'blockstore.json'),
    s3Cache: join(root, 's3-cache'),
    directWrites: join(root, 'direct-writes'),
    migrateJournal: join(root, 'blocks-migrate.journal'),
    keys: join(root, 'keys'),
    identity: join(root, 'identity.key'),
    lock: join(root, 'serve.lock'),
    adminSocket: join(root, 'admin.sock'),
    nativeCache: join(root, '.native')
  }
}
