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
import { LmdbDatastore } from '../ledger/lmdb/datastore.js'
import { DenialLedger } from '../ledger/lmdb/denials.js'
import { openLedgerEnv } from '../ledger/lmdb/open.js'
import { PinLedger, type UpgradeProgress } from '../ledger/lmdb/pins.js'
import { recordedSettings, recordSettings, schemaVersion, type RecordedSettings } from '../ledger/lmdb/settings.js'
import { SettlementNotes } from '../ledger/lmdb/settlements.js'
import { TokenLedger } from '../ledger/lmdb/tokens.js'
import { UploadTickets } from '../ledger/lmdb/tickets.js'
import type { GcDeps } from '../service/background/gc.js'
import { blocksHeld, settlementActions } from '../service/payments/settlement-fulfil.js'

export interface CoreOptions {
  /** how long an expired pin keeps its blocks; default: what the last serve recorded, else the setting's default */
  graceMs?: number
  /**
   * where the blocks are (the caller opens and closes it: serve its switchable
   * backend, admin commands the data dir's); default: blocks/ on disk
   */
  blocks?: BlockBackend
  /** how far the ledger's upgrade has got (PinLedger.upgrade), while it runs */
  onUpgrade?: (p: UpgradeProgress) => void
  /**
   * only the upgrade's steps that serving depends on run at the open
   * (PinLedger.upgradeBeforeServing); the caller runs the rest with
   * upgradeLater() (serve, once it serves). Default: the whole upgrade.
   */
  upgradeLater?: boolean
}

export interface Core {
  paths: DataDirLayout
  /** what the last serve recorded of its settings (absent before any serve ran here) */
  recorded: Partial<RecordedSettings>
  graceMs: number
  pins: PinLedger
  notes: SettlementNotes
  tokenLedger: TokenLedger
  denialLedger: DenialLedger
  /** where the blocks are (disk or an S3 bucket) */
  blocks: BlockBackend
  staging: BlockStaging
  /** blocks and bytes stored: one walk, then what commits and gc report */
  usage: BlockstoreUsageTracker
  /** commits of staged blocks against gc's sweep */
  lock: CommitLock
  /** prepaid upload tickets */
  tickets: UploadTickets
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
  /** the libp2p/Helia datastore (a sub-database of the ledger) */
  datastore(): LmdbDatastore
  /**
   * The rest of the ledger's upgrade (PinLedger.upgradeLater) in the
   * background: `done` resolves once it is done or stopped (rejects if it
   * failed); stop() halts it after the batch under way and waits for that.
   */
  upgradeLater(onProgress?: (p: UpgradeProgress) => void): { done: Promise<boolean>, stop(): Promise<void> }
  /** the ledger's schema version (a read that proves the ledger answers) */
  schemaVersion(): unknown
  /** records serve's settings for the admin commands that run while it is stopped */
  record(settings: RecordedSettings): Promise<void>
  close(): Promise<void>
}

/** Opens the ledger (upgrading its indexes) and builds the core over it. */
export async function openCore (paths: DataDirLayout, opts: CoreOptions = {}): Promise<Core> {
  const env = await openLedgerEnv(paths.ledger)
  try {
    const recorded = recordedSettings(env)
    const graceMs = opts.graceMs ?? (recorded.expiryGrace ?? settingDefault('expiryGrace')) * 1000
    const pins = new PinLedger(env, { graceMs })
    // a large ledger's new index holds the event loop: before anything else starts
    if (opts.upgradeLater === true) await pins.upgradeBeforeServing(opts.onUpgrade)
    else await pins.upgrade(opts.onUpgrade)
    const notes = new SettlementNotes(env)
    const blocks = opts.blocks ?? new FsBackend(paths.blocks)
    const usage = new BlockstoreUsageTracker(async () => await blocks.usage())
    const staging = new BlockStaging(blocks, paths.staging, (n, bytes) => { usage.added(n, bytes) })
    const lock = new CommitLock()
    const tickets = new UploadTickets(env, pins)
    const inFlight = new InFlightBlocks(lock)
    const tokenLedger = new TokenLedger(env)
    let keys: Promise<KeyStore> | undefined
    const keystore = async (): Promise<KeyStore> => await (keys ??= KeyStore.open(paths.keys))
    const tokens = (ks: KeyStore, issuer: string, ttlSeconds: number): TokenService =>
      new TokenService({ keystore: ks, issuer, audience: issuer, ttlSeconds, isRevoked: (c) => tokenLedger.isRevoked(c) })
    return {
      paths,
      recorded,
      graceMs,
      pins,
      notes,
      tokenLedger,
      denialLedger: new DenialLedger(env),
      blocks,
      staging,
      usage,
      lock,
      tickets,
      inFlight,
      direct: new DirectImports(blocks, inFlight, (n, bytes) => { usage.added(n, bytes) }),
      journals: new WriteJournals(paths.directWrites),
      settlement: settlementActions({ ledger: pins, staging, lock, tickets }),
      gc: { pins, blocks, lock, graceMs, held: () => blocksHeld(notes.all()), inFlight, onRemoved: (n, bytes) => { usage.removed(n, bytes) } },
      keystore,
      tokens,
      recordedTokens: async () => recorded.tokenIssuer != null && recorded.tokenTtl != null ? tokens(await keystore(), recorded.tokenIssuer, recorded.tokenTtl) : undefined,
      datastore: () => new LmdbDatastore(env.datastore),
      upgradeLater: (onProgress) => {
        const done = pins.upgradeLater(onProgress)
        return { done, stop: async () => { pins.haltUpgrade(); await done.catch(() => {}) } }
      },
      schemaVersion: () => schemaVersion(env),
      record: async (s) => { await recordSettings(env, s) },
      close: async () => { await env.close() }
    }
  } catch (err) {
    await env.close()
    throw err
  }
}
