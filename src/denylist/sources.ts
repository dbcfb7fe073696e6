/**
 * The denylists of `--denylist`: files, and directories whose `*.deny` files
 * are all read (not recursively), in precedence order — the configured
 * paths in order, a directory's files by name — so a later list overrides an
 * earlier one (the spec's alphabetical order; put local exceptions in a
 * `zz-local.deny`).
 *
 * Kept current while serve runs: a change to a watched directory (fs.watch,
 * debounced) and, as a fallback for file systems that do not report changes,
 * a periodic stat of every list trigger a rescan; each file a watch event
 * named, and each new or changed one (by size, mtime, inode), is read again
 * and replaces its previous version
 * only once it has been read whole, so lookups never see half a list. A list
 * that cannot be read (a bad header, a read error) keeps its previous
 * version, with an error in the log; a removed file stops applying. Bad
 * lines are logged with file:line and skipped, at most LOGGED_PROBLEMS per
 * read (then a count).
 */
import { PindError } from '../kernel/errors.js'
import { watch, type FSWatcher } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { Logger } from '../kernel/log.js'
import type { CompiledList } from './compiled.js'
import type { DenylistHeader } from './header.js'
import { readDenylistFile } from './read-file.js'

const DEBOUNCE_MS = 200
const POLL_MS = 10_000
const LOGGED_PROBLEMS = 20

export interface DenylistFile {
  path: string
  list: CompiledList
  header?: DenylistHeader
  loadedAt: string
  lines: number
  problems: number
  ms: number
  /** the last read failed; the rules are those of the read before it */
  error?: string
}

interface Stamp { size: number, mtimeMs: number, ino: number }

export class DenylistConfigError extends PindError {
  override name = 'DenylistConfigError'
}

export class DenylistSources {
  /** by path; `file` undefined: its one read failed */
  private readonly loaded = new Map<string, { file?: DenylistFile, stamp: Stamp }>()
  private current: readonly DenylistFile[] = []
  private watchers: FSWatcher[] = []
  private poll: NodeJS.Timeout | undefined
  private debounce: NodeJS.Timeout | undefined
  private scanning: Promise<void> | undefined
  private again = false
  private closed = false
  /** files a watch event named since the last scan: read again whatever their stamp says */
  private readonly dirty = new Set<string>()
  private readonly onChange: () => void
  private readonly pollMs: number

  /** `onChange`: after a rescan changed what applies; `pollMs`: the periodic check (tests) */
  constructor (private readonly paths: readonly string[], private readonly log: Logger, opts: { onChange?: () => void, pollMs?: number } = {}) {
    this.onChange = opts.onChange ?? (() => {})
    this.pollMs = opts.pollMs ?? POLL_MS
  }

  /** The lists as they apply now, in precedence order (the last one wins). */
  files (): readonly DenylistFile[] {
    return this.current
  }

  /** Reads every list once. A configured path that does not exist is a DenylistConfigError. */
  async load (): Promise<void> {
    for (const p of this.paths) {
      try {
        await stat(p)
      } catch (err) {
        throw new DenylistConfigError(`--denylist ${p}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (err as Error).message}`)
      }
    }
    await this.rescan()
  }

  /** Follows changes until close(). */
  watch (): void {
    const dirs = new Map<string, Set<string> | 'all'>()
    for (const p of this.paths) {
      if (this.isDir.get(p) === true) dirs.set(p, 'all')
      else {
        const d = dirname(p)
        const names = dirs.get(d)
        if (names !== 'all') dirs.set(d, new Set([...(names ?? []), basename(p)]))
      }
    }
    for (const [dir, names] of dirs) {
      try {
        const w = watch(dir, { persistent: false }, (_event, name) => {
          if (name != null && (names === 'all' ? !name.endsWith('.deny') : !names.has(name))) return
          if (name != null) this.dirty.add(join(dir, name))
          this.soon()
        })
        w.on('error', (err) => { this.log.warn('cannot watch a denylist directory; changes are seen by the periodic check', { dir, error: err.message }) })
        this.watchers.push(w)
      } catch (err) {
        this.log.warn('cannot watch a denylist directory; changes are seen by the periodic check', { dir, error: (err as Error).message })
      }
    }
    this.poll = setInterval(() => { this.soon(0) }, this.pollMs)
    this.poll.unref()
  }

  async close (): Promise<void> {
    this.closed = true
    clearInterval(this.poll)
    clearTimeout(this.debounce)
    for (const w of this.watchers) w.close()
    this.watchers = []
    await this.scanning
  }

  private readonly isDir = new Map<string, boolean>()

  private soon (ms = DEBOUNCE_MS): void {
    if (this.closed) return
    clearTimeout(this.debounce)
    this.debounce = setTimeout(() => { void this.rescan() }, ms)
    this.debounce.unref()
  }

  /** Reads what changed since the last scan; one scan at a time. */
  async rescan (): Promise<void> {
    if (this.scanning != null) {
      this.again = true
      await this.scanning
      return
    }
    this.scanning = (async () => {
      do {
        this.again = false
        try {
          await this.scanOnce()
        } catch (err) {
          this.log.error('denylist scan failed; the lists as last read still apply', { error: err })
        }
      } while (this.again && !this.closed)
    })()
    try {
      await this.scanning
    } finally {
      this.scanning = undefined
    }
  }

  private async scanOnce (): Promise<void> {
    const dirty = new Set(this.dirty)
    this.dirty.clear()
    const order = await this.listFiles()
    const stamps = new Map<string, Stamp>()
    for (const p of order) {
      try {
        const st = await stat(p)
        stamps.set(p, { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino })
      } catch {} // gone: dropped below
    }
    for (const p of [...this.loaded.keys()]) {
      if (stamps.has(p)) continue
      if (this.loaded.get(p)?.file != null) this.log.warn('denylist removed: its rules no longer apply', { file: p })
      this.loaded.delete(p)
    }
    for (const [p, stamp] of stamps) {
      const had = this.loaded.get(p)
      if (had != null && sameStamp(had.stamp, stamp) && !dirty.has(p)) continue
      await this.read(p, stamp, had?.file)
    }
    const current: DenylistFile[] = []
    for (const p of order) {
      const f = this.loaded.get(p)?.file
      if (f != null) current.push(f)
    }
    const changed = current.length !== this.current.length || current.some((f, i) => f !== this.current[i])
    this.current = current
    if (changed) this.onChange()
  }

  /** Reads one list; when that fails, its previous version (if any) stays. */
  private async read (path: string, stamp: Stamp, previous: DenylistFile | undefined): Promise<void> {
    const t0 = performance.now()
    let logged = 0
    try {
      const r = await readDenylistFile(path, (p) => {
        if (++logged <= LOGGED_PROBLEMS) this.log.warn('denylist line skipped', { file: path, line: p.line, at: `${path}:${p.line}`, problem: p.problem })
      })
      if (r.problems > LOGGED_PROBLEMS) this.log.warn('more denylist lines skipped', { file: path, skipped: r.problems, logged: LOGGED_PROBLEMS })
      const file: DenylistFile = {
        path,
        list: r.list,
        ...(r.header != null ? { header: r.header } : {}),
        loadedAt: new Date().toISOString(),
        lines: r.lines,
        problems: r.problems,
        ms: Math.round(performance.now() - t0)
      }
      this.loaded.set(path, { file, stamp })
      this.log.info(previous == null ? 'denylist loaded' : 'denylist reloaded', {
        file: path, name: r.header?.name, rules: r.list.counts.rules, ipns: r.list.counts.ipns, skipped: r.problems, ms: file.ms
      })
    } catch (err) {
      const message = (err as Error).message
      this.log.error(previous == null ? 'denylist cannot be read; it does not apply' : 'denylist cannot be read; its previous version still applies', { file: path, error: message })
      // the stamp is remembered, so the same broken file is not read (and logged) again and again
      this.loaded.set(path, { ...(previous != null ? { file: { ...previous, error: message } } : {}), stamp })
    }
  }

  /** The files that apply, in precedence order. */
  private async listFiles (): Promise<string[]> {
    const out: string[] = []
    for (const p of this.paths) {
      let st
      try {
        st = await stat(p)
      } catch {
        continue // gone: what it held stops applying
      }
      this.isDir.set(p, st.isDirectory())
      if (!st.isDirectory()) { out.push(p); continue }
      const names = (await readdir(p, { withFileTypes: true }))
        .filter(e => (e.isFile() || e.isSymbolicLink()) && e.name.endsWith('.deny'))
        .map(e => e.name)
        .sort()
      for (const n of names) out.push(join(p, n))
    }
    return [...new Set(out)]
  }
}

function sameStamp (a: Stamp, b: Stamp): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino
}
