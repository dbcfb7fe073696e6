/**
 * Several files, each named by its relative path, imported as one UnixFS
 * directory with IPIP-499's `unixfs-v1-2025` profile (ipfs-unixfs-importer's
 * implementation of it: CIDv1, raw leaves, 1 MiB chunks, balanced, 1,024
 * links per node, HAMT-sharded above 256 KiB of estimated block bytes), so
 * a client that imports the same files with the profile gets the same root.
 * Files stream through one after the other; the byte cap counts all of them.
 * Paths are checked as each file arrives: relative, `/`-separated, no empty,
 * `.` or `..` segment, none twice, none both a file and a directory.
 */
import { importer } from 'ipfs-unixfs-importer'
import type { CID } from 'multiformats/cid'
import { PindError } from '../kernel/errors.js'
import { TooLargeError, UNIXFS_PROFILE, type ImportTarget } from './import.js'
import { WriteBehind } from './write-behind.js'

/** files one directory upload may hold */
export const MAX_DIRECTORY_FILES = 10_000
/** bytes of a path, and of one of its segments (a UnixFS link name) */
const MAX_PATH_BYTES = 4096
const MAX_NAME_BYTES = 255

/** A directory that cannot be imported as sent: the message names the path. */
export class DirectoryError extends PindError {
  override name = 'DirectoryError'
}

export interface DirectoryImportResult {
  /** the directory's root */
  cid: CID
  /** bytes of all files */
  fileSize: number
  /** each file's CID and size, in the order they arrived */
  files: Array<{ path: string, cid: CID, size: number }>
}

export async function importDirectory (files: AsyncIterable<{ path?: string, bytes: AsyncIterable<Uint8Array> }>, o: { blockstore: ImportTarget, maxBytes: number, maxFiles?: number, signal?: AbortSignal }): Promise<DirectoryImportResult> {
  const maxFiles = o.maxFiles ?? MAX_DIRECTORY_FILES
  let total = 0
  const paths = new Set<string>()
  const dirs = new Set<string>()
  const sizes = new Map<string, number>()
  const source = (async function * () {
    for await (const f of files) {
      if (paths.size >= maxFiles) throw new DirectoryError(`more than ${maxFiles} files: at most ${maxFiles} per directory upload`)
      const path = checkPath(f.path, paths, dirs)
      let size = 0
      const content = (async function * () {
        for await (const chunk of f.bytes) {
          o.signal?.throwIfAborted()
          size += chunk.byteLength
          total += chunk.byteLength
          if (total > o.maxBytes) throw new TooLargeError(o.maxBytes)
          yield chunk
        }
        sizes.set(path, size)
      })()
      yield { path, content }
    }
  })()
  const out: DirectoryImportResult['files'] = []
  let root: CID | undefined
  // one file at a time (the next part of the body arrives only once this one is read), its
  // blocks written behind the import: small files do not each wait for their own write
  const writer = new WriteBehind(o.blockstore)
  try {
    for await (const entry of importer(source, writer, { profile: UNIXFS_PROFILE, wrapWithDirectory: true, fileImportConcurrency: 1 })) {
      const path = entry.path ?? ''
      if (path === '') root = entry.cid
      else if (sizes.has(path)) out.push({ path, cid: entry.cid, size: sizes.get(path) as number })
    }
    await writer.flush()
  } catch (err) {
    // nothing still being written once the caller discards what was staged
    await writer.settle()
    throw err
  }
  if (root == null || paths.size === 0) throw new DirectoryError('a directory upload needs at least one file part')
  const order = new Map([...paths].map((p, i) => [p, i]))
  out.sort((a, b) => (order.get(a.path) ?? 0) - (order.get(b.path) ?? 0))
  return { cid: root, fileSize: total, files: out }
}

/** the path as the directory will hold it, or a DirectoryError saying what is wrong with it */
function checkPath (path: string | undefined, paths: Set<string>, dirs: Set<string>): string {
  if (path == null || path === '') throw new DirectoryError('a file part has no filename: in a directory upload each part\'s filename is its path in the directory')
  const shown = JSON.stringify(path.length > 120 ? `${path.slice(0, 120)}…` : path)
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) throw new DirectoryError(`the path ${shown} is longer than ${MAX_PATH_BYTES} bytes`)
  if (path.startsWith('/')) throw new DirectoryError(`the path ${shown} is absolute: paths are relative to the directory`)
  if (path.includes('\\') || path.includes('\u0000')) throw new DirectoryError(`the path ${shown} holds a backslash or a NUL: separate segments with /`)
  const segments = path.split('/')
  for (const s of segments) {
    if (s === '') throw new DirectoryError(`the path ${shown} has an empty segment`)
    if (s === '.' || s === '..') throw new DirectoryError(`the path ${shown} has a "${s}" segment: paths name files inside the directory`)
    if (Buffer.byteLength(s) > MAX_NAME_BYTES) throw new DirectoryError(`the path ${shown} has a segment longer than ${MAX_NAME_BYTES} bytes`)
  }
  if (paths.has(path)) throw new DirectoryError(`the path ${shown} is sent twice`)
  if (dirs.has(path)) throw new DirectoryError(`the path ${shown} is both a file and a directory of other files`)
  for (let i = 1; i < segments.length; i++) {
    const dir = segments.slice(0, i).join('/')
    if (paths.has(dir)) throw new DirectoryError(`the path ${shown} is inside ${JSON.stringify(dir)}, which is a file`)
    dirs.add(dir)
  }
  paths.add(path)
  return path
}
