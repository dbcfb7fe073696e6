/**
 * The core pind runs on, assembled in one place: the ledger and its records,
 * the blockstore's staging, usage figures and commit lock, the settlement
 * actions and the signing keys. `pind serve` (daemon.ts) starts its node,
 * routes and background work on it; the admin commands run the same service
 * functions on it when no serve holds the data dir (cli/admin-target.ts), as
 * Kubo's commands run against one core online and offline. The caller holds
 * the data dir's lock.
 */
import { KeyStore } from '../auth/keystore.js'
import { folderKeySource, ledgerKeySource } from '../auth/key-source.js'
import { TokenService } from '../auth/tokens.js'
import { settingDefault } from '../config/settings.js'
import type { DataDirLayout } from '../datadir/layout.js'
import type { BlockBackend } from '../ipfs/block-backend.js'
import { BlockstoreUsageTracker } from '../ipfs/blockstore-usage.js'
import { FsBackend } from '../ipfs/fs-backend.js'
import { CommitLock } from '../ipfs/commit-lock.js'
import { BlockStaging } from '../ipfs/staging.js'
import { DirectImports } from '../ipfs/direct-import.js'
import { InFlightBlocks } from '../ipfs/in-flight-blocks.js'
import { WriteJournals } from '../ipfs/write-journal.js'
import type { Ledger, RecordedSettings, UpgradeProgress } from '../ledger/ledger.js'
import { openLedger, type LedgerSettings } from './open-ledger.js'
import type { ServableIndex } from '../service/serving/servable-blocks.js'
import type { GcDeps } from '../service/background/gc.js'
import { blocksHeld, settlementActions } from '../service/payments/settlement-fulfil.js'

export interface CoreOptions {
  /** which ledger (--ledger, --database-*); default: what the data dir records, else its LMDB file */
  ledger?: Partial<LedgerSettings>
  /** record the ledger's database in the data dir (serve) */
  recordLedger?: boolean
  /** how long an expired pin keeps its blocks; default: what the last serve recorded, else the setting's default */
  graceMs?: number
  /**
   * where the blocks are (the caller opens and closes it: serve its switchable
   * backend, admin commands the data dir's); default: blocks/ on disk
   */
  blocks?: BlockBackend
  /** how far the ledger's upgrade has got, while it runs */
  onUpgrade?: (p: UpgradeProgress) => void
  /**
   * only the upgrade's steps that serving depends on run at the open; the
   * caller runs the rest with ledger.upgradeLater() (serve, once it
   * serves). Default: the whole upgrade.
   */
  upgradeLater?: boolean
}

export interface Core {
  paths: DataDirLayout
  /** what the last serve recorded of its settings (absent before any serve ran here) */
  recorded: Partial<RecordedSettings>
  graceMs: number
  /** pins, payments, tickets, settlement notes, tokens, denials, the provide schedule */
  ledger: Ledger
  /**
   * may this block be served: answered synchronously (bitswap asks for every
   * block). LMDB answers from its memory-mapped file, current with every
   * commit; PostgreSQL from ServableBlocks (service/serving/servable-blocks.ts),
   * loaded at the open and kept by the ledger's changes (./open-ledger.ts)
   */
  servedBlocks: ServableIndex
  /** which ledger, for logs (no password) */
  ledgerDescription: string
  /** where the blocks are (disk or an S3 bucket) */
  blocks: BlockBackend
  staging: BlockStaging
  /** blocks and bytes stored: one walk, then what commits and gc report */
  usage: BlockstoreUsageTracker
  /** commits of staged blocks against gc's sweep */
  lock: CommitLock
  /** blocks written straight to the store by uploads not yet claimed: gc leaves them alone */
  inFlight: InFlightBlocks
  /** imports whose blocks go straight to the store (uploads with a ticket) */
  direct: DirectImports
  /** what those imports are writing, for the start after a crash */
  journals: WriteJournals
  /** what settlement reconciliation does with a note: record what it paid for, or release it */
  settlement: ReturnType<typeof settlementActions>
  /** what gc works with */
  gc: GcDeps
  /** the signing keys (opened on first use: a key is created when there is none) */
  keystore(): Promise<KeyStore>
  /** wallet tokens as the serve of `issuer` issues them */
  tokens(keystore: KeyStore, issuer: string, ttlSeconds: number): TokenService
  /** wallet tokens as the last serve issued them, when one recorded its issuer */
  recordedTokens(): Promise<TokenService | undefined>
  close(): Promise<void>
}

/** Opens the ledger (upgrading its indexes) and builds the core over it. */
export async function openCore (paths: DataDirLayout, opts: CoreOptions = {}): Promise<Core> {
  let graceMs = 0
  const opened = await openLedger(paths, opts.ledger ?? {}, {
    graceMs: (recorded) => (graceMs = opts.graceMs ?? (recorded.expiryGrace ?? settingDefault('expiryGrace')) * 1000),
    upgrade: opts.upgradeLater === true ? 'before-serving' : 'all',
    ...(opts.onUpgrade != null ? { onUpgrade: opts.onUpgrade } : {}),
    ...(opts.recordLedger === true ? { record: true } : {})
  })
  const { ledger } = opened
  try {
    const recorded = await ledger.recordedSettings()
    const blocks = opts.blocks ?? new FsBackend(paths.blocks)
    const usage = new BlockstoreUsageTracker(async () => await blocks.usage())
    const staging = new BlockStaging(blocks, paths.staging, (n, bytes) => { usage.added(n, bytes) })
    const lock = new CommitLock(ledger.blockFence)
    const inFlight = new InFlightBlocks(lock)
    let keys: Promise<KeyStore> | undefined
    // shared by every front end when the ledger is (a token one issues verifies on all), else the data dir's own
    const keySource = ledger.signingKeys != null ? ledgerKeySource(ledger.signingKeys, `the ledger (${opened.describe})`) : folderKeySource(paths.keys)
    const keystore = async (): Promise<KeyStore> => await (keys ??= KeyStore.open(keySource))
    const tokens = (ks: KeyStore, issuer: string, ttlSeconds: number): TokenService =>
      new TokenService({ keystore: ks, issuer, audience: issuer, ttlSeconds, isRevoked: async (c) => await ledger.tokens.isRevoked(c) })
    return {
      paths,
      recorded,
      graceMs,
      ledger,
      servedBlocks: opened.servedBlocks,
      ledgerDescription: opened.describe,
      blocks,
      staging,
      usage,
      lock,
      inFlight,
      direct: new DirectImports(blocks, inFlight, (n, bytes) => { usage.added(n, bytes) }),
      journals: new WriteJournals(paths.directWrites),
      settlement: settlementActions({ ledger: ledger.pins, tickets: ledger, staging, blocks, lock }),
      gc: { pins: ledger.pins, blocks, lock, graceMs, held: async () => blocksHeld(await ledger.notes.all()), inFlight, onRemoved: (n, bytes) => { usage.removed(n, bytes) } },
      keystore,
      tokens,
      recordedTokens: async () => recorded.tokenIssuer != null && recorded.tokenTtl != null ? tokens(await keystore(), recorded.tokenIssuer, recorded.tokenTtl) : undefined,
      close: async () => { await opened.close() }
    }
  } catch (err) {
    await opened.close()
    throw err
  }
}
