/**
 * Staged writes: an import writes its blocks into a private staging folder
 * (same layout as the blockstore), and only a commit moves them into the
 * blockstore — fsync'd files, then rename, then fsync'd directories. So:
 *   - a failed, refused (413) or unpaid import leaves nothing in the blockstore;
 *   - gc never sees half-imported DAGs (in-flight imports are invisible to it);
 *   - a crash leaves either a staging folder (removed at start) or committed,
 *     durable blocks — never a half-written block under a valid name.
 * Commits run under the blockstore's commit lock so gc (which takes it
 * exclusively) never sweeps between a commit and its ledger record.
 */
import { randomUUID } from 'node:crypto'
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { FsBlockstore } from 'blockstore-fs'
import { NextToLast } from 'blockstore-fs/sharding'
import type { CID } from 'multiformats/cid'

const SHARDING = new NextToLast()

export interface StagedImport {
  id: string
  /** write blocks here */
  blockstore: FsBlockstore
  /** CIDs written so far, in order */
  cids: CID[]
  bytes: number
}

export class BlockStaging {
  constructor (private readonly blocksDir: string, private readonly stagingDir: string) {}

  /** Removes staging folders left by a crash. */
  async sweepLeftovers (): Promise<number> {
    await mkdir(this.stagingDir, { recursive: true })
    const entries = await readdir(this.stagingDir)
    await Promise.all(entries.map(async e => { await rm(join(this.stagingDir, e), { recursive: true, force: true }) }))
    return entries.length
  }

  async begin (): Promise<StagedImport> {
    const id = randomUUID()
    const inner = new FsBlockstore(join(this.stagingDir, id), { shardingStrategy: SHARDING })
    await inner.open()
    const staged: StagedImport = { id, blockstore: inner, cids: [], bytes: 0 }
    const put = inner.put.bind(inner)
    inner.put = async (cid, bytes, options) => {
      const k = await put(cid, bytes, options)
      staged.cids.push(cid)
      if (bytes instanceof Uint8Array) staged.bytes += bytes.byteLength
      return k
    }
    return staged
  }

  /** Moves every staged block into the blockstore durably. Call under the commit lock. */
  async commit (staged: StagedImport): Promise<void> {
    const root = join(this.stagingDir, staged.id)
    const dirs = new Set<string>()
    const seen = new Set<string>()
    for (const cid of staged.cids) {
      const { dir, file } = SHARDING.encode(cid)
      if (seen.has(file)) continue
      seen.add(file)
      const from = join(root, dir, file)
      await fsyncPath(from, 'r')
      await mkdir(join(this.blocksDir, dir), { recursive: true })
      await rename(from, join(this.blocksDir, dir, file))
      dirs.add(dir)
    }
    for (const dir of dirs) await fsyncPath(join(this.blocksDir, dir), 'r')
    await fsyncPath(this.blocksDir, 'r')
    await this.discard(staged)
  }

  /** Removes a staging folder; retried if a late write races the removal (ENOTEMPTY). */
  async discard (staged: StagedImport): Promise<void> {
    await rm(join(this.stagingDir, staged.id), { recursive: true, force: true, maxRetries: 5, retryDelay: 50 })
  }
}

async function fsyncPath (path: string, flags: string): Promise<void> {
  const fh = await open(path, flags)
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}
