/** Block files and their bytes in the blockstore folder (a walk: call it rarely). */
import { opendir, stat } from 'node:fs/promises'
import { join } from 'node:path'

export async function blockstoreUsage (blocksDir: string): Promise<{ blocks: number, bytes: number }> {
  let blocks = 0
  let bytes = 0
  for await (const dir of await opendir(blocksDir)) {
    if (!dir.isDirectory()) continue
    for await (const f of await opendir(join(blocksDir, dir.name))) {
      if (!f.isFile() || !f.name.endsWith('.data')) continue
      try {
        bytes += (await stat(join(blocksDir, dir.name, f.name))).size
        blocks++
      } catch {}
    }
  }
  return { blocks, bytes }
}
