/**
 * The runtime's addon (native/malloc-trim.c, built by scripts/build-native.mjs into dist/native/,
 * shipped inside the binary): what Node exposes no way to call.
 * - glibc's malloc_trim(0) after each forced collection (`--runtime-malloc-trim`): the free pages
 *   inside malloc's arenas go back to the kernel, not only those at an arena's top (all that free()
 *   returns by itself). docs/runtime.md, "glibc malloc".
 * - madvise(MADV_DONTNEED) of the read-only shared file mappings after it (`--runtime-map-trim`):
 *   LMDB's mapped pages leave the resident set. docs/runtime.md, "LMDB's mapped pages".
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export interface MallocTrim {
  /** malloc_trim(0): true when memory went back to the kernel */
  trim(): boolean
  /**
   * `--runtime-map-trim`: the pages of the process's read-only shared file mappings (LMDB's files)
   * leave its resident set, staying in the page cache; the bytes of those mappings, or -1 when
   * /proc/self/maps could not be read
   */
  dropFilePages(): number
}

/** beside the bundle (dist/native/, inside the binary too), or the checkout's dist/native/ when run from source */
export function addonPaths (): string[] {
  return ['native/malloc-trim.node', '../../dist/native/malloc-trim.node'].map(p => fileURLToPath(new URL(p, import.meta.url)))
}

/** The addon loaded, or why it cannot be (not built, or a C library without malloc_trim: musl). */
export function loadMallocTrim (paths = addonPaths()): MallocTrim | Error {
  const file = paths.find(p => existsSync(p))
  if (file == null) return new Error(`its addon is missing (looked in ${paths.join(', ')}; npm run build makes it)`)
  const mod: { exports: { trim?: unknown, dropFilePages?: unknown } } = { exports: {} }
  try {
    process.dlopen(mod, file)
  } catch (err) {
    return new Error(`its addon ${file} could not be loaded (glibc's malloc_trim is needed): ${(err as Error).message}`)
  }
  const { trim, dropFilePages } = mod.exports
  if (typeof trim !== 'function' || typeof dropFilePages !== 'function') return new Error(`${file} is not pind's malloc-trim addon`)
  return { trim: () => trim() === true, dropFilePages: () => Number(dropFilePages()) }
}
