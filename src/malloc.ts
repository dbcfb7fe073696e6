/**
 * glibc malloc settings for the long-running `serve` process.
 *
 * Node allocates every ArrayBuffer (socket reads of 64 KiB, 1 MiB blocks
 * and chunk buffers, block files read for the gateway) with malloc. glibc
 * serves a large request with its own mmap at first, but raises that
 * threshold to the size of each such chunk freed (up to 32 MiB), so after
 * the first few frees every block-sized buffer comes from the heap. Under
 * concurrent uploads and reads they are freed in no particular order among
 * long-lived small allocations, the heap fills with holes it can only give
 * back from its top, and the process keeps its high-water mark: measured in
 * scripts/soak.mjs (16 paying clients), ~100 MB of free heap still resident
 * when idle, 97 MB of it returned at once by malloc_trim(0).
 *
 * What it is worth, the same binary in the same soak (16 + 8 clients, a
 * restart at a third; README, "Soak"): without it RSS averaged 303 MiB under
 * load and kept climbing after the restart (287 -> 331 MiB over 10 minutes),
 * 333 MiB when idle after the load; with it 250 MiB on average over the same
 * 20 minutes (255 MiB over 30), levelling at ~260 MiB, 244 MiB when idle.
 * Earlier 4-minute runs without a restart (max / idle RSS): glibc's defaults
 * 351 / 351 MiB, MALLOC_ARENA_MAX=2 304 / 291, a 256 KiB threshold 338 / 321,
 * 64 KiB 296 / 254.
 *
 * Tried on top and not kept (issue 18; two 5-minute soaks of the same
 * binary side by side, 16 + 8 clients each, load average 15):
 * glibc.malloc.arena_max=2 (fewer thread arenas for libuv's pool, lmdb's
 * writer, V8's workers) gave RSS max 272 vs 270 MiB and 234 vs 202 MiB idle
 * after the load (+54% vs +36% of the start): no gain. trim_threshold:
 * fixing mmap_threshold also stops glibc from raising trim_threshold, which
 * stays at its default of 128 KiB, so setting it to 128 KiB changes nothing.
 * The 30-minute soak of this tree on a quiet machine (load average 5.6,
 * 2.5 times the request rate of the run above): RSS max 358 MiB, 306 on
 * average under load, +14.8% over the last 15 minutes (half of it the
 * ledger's mapped pages), 352 MiB idle after the load against 150 at start.
 * (glibc 2.36 parses GLIBC_TUNABLES in place: /proc/<pid>/environ then shows
 * only the first of several tunables, though all apply.)
 *
 * A fixed threshold (glibc.malloc.mmap_threshold, which also stops the
 * raising) gives each buffer at least that large a mapping of its own that
 * goes back to the kernel when it is freed. 16 KiB rather than 64 KiB since
 * issue 18: the pieces of request bodies, socket reads and block slices of
 * 16-64 KiB then leave no holes either. Two pairs of 5-minute soaks side by
 * side (the same binary, 8 + 4 clients, a restart at a third, load average
 * 12-15): idle RSS 60 s after the load 176 vs 219 MiB (anonymous 104 vs
 * 146; +18% vs +43% of the start) and 176 vs 197 MiB (anonymous 104 vs 125);
 * RSS max 244 vs 277 and 242 vs 240 MiB; mean under load 205 vs 228 and
 * 200 vs 210 MiB; requests served 4,522 vs 4,917 and 4,003 vs 4,117 (-8%,
 * -3%: the same within the noise of a shared machine). 8 KiB gave nothing
 * more (side by side with 16 KiB: idle 176 vs 178 MiB, max 248 vs 240 MiB).
 * What remains is freed small chunks (under 16 KiB: V8's and the native
 * modules' own allocations), which glibc gives back only from the top of
 * each arena: a heap snapshot taken under load (its generator's many small
 * allocations) left the process at 310 MiB idle with 22 MiB of ArrayBuffers
 * and a 46 MiB heap. Counted with malloc_info() through gdb (issue 18,
 * later): at idle 60 s after a 5-minute soak (8 + 4 clients, the tree with
 * heap.ts's last-resort collection) the 10 arenas held 19.1 MiB from the
 * system, 10.9 MiB of it free chunks, against 7.1 MiB (2.1 free) at a fresh
 * start; the 21 chunks mapped on their own (32 MiB, lmdb's 16 MiB buffer
 * among them, mostly untouched) were the same at start and at idle. So the
 * arenas' holes are ~9 MiB of the ~25 MiB of anonymous memory idle adds to
 * a start; the rest is V8's (compiled code, bytecode and feedback of the
 * paths the load ran: +11 MiB of 256 KiB pages, +6 MiB of code space).
 * glibc reads its tunables only when a process
 * starts, and the packaged binary cannot set them any other way, so `serve`
 * starts itself again, once, with them in its environment (process.execve:
 * the same pid, stdio and arguments; about one more start-up of the
 * binary's code, before anything is opened). Alternatives that need no exec
 * do not exist for the binary: Node exposes neither mallopt() nor
 * malloc_trim(), and an Environment= line would cover systemd only. An operator who sets any
 * glibc.malloc tunable in GLIBC_TUNABLES keeps exactly those; on other C
 * libraries (musl) nothing is done.
 *
 * Issue 18, the young generation's cap: V8 also reads its heap's sizes only
 * at start, so the same start-again carries `--max-semi-space-size` in
 * NODE_OPTIONS (heap.ts; appended to what NODE_OPTIONS holds, and left out
 * when the operator sized the young generation there). On musl that is now
 * the only reason to start again.
 */
import { isSea } from 'node:sea'
import { cappedNodeOptions } from './heap.js'

export const MALLOC_TUNABLES = 'glibc.malloc.mmap_threshold=16384'
/**
 * Set in the environment of the process started again: it never starts
 * again, even if GLIBC_TUNABLES did not survive the exec (glibc drops it for
 * a binary given file capabilities, e.g. to bind port 443: AT_SECURE).
 */
export const STARTED_AGAIN = 'PIND_MALLOC_TUNED'

/**
 * The environment `serve` runs with, or undefined when it already has it (or
 * should be left alone): glibc's malloc tunables, and V8's young generation
 * cap in NODE_OPTIONS (heap.ts), each unless the operator set their own.
 */
export function tunedEnvironment (env: NodeJS.ProcessEnv, glibc: boolean): NodeJS.ProcessEnv | undefined {
  if (env[STARTED_AGAIN] != null) return undefined
  const tuned: NodeJS.ProcessEnv = {}
  const current = env.GLIBC_TUNABLES ?? ''
  if (glibc && !/(^|:)glibc\.malloc\./.test(current)) tuned.GLIBC_TUNABLES = current === '' ? MALLOC_TUNABLES : `${current}:${MALLOC_TUNABLES}`
  const nodeOptions = cappedNodeOptions(env.NODE_OPTIONS)
  if (nodeOptions != null) tuned.NODE_OPTIONS = nodeOptions
  if (Object.keys(tuned).length === 0) return undefined
  return { ...env, ...tuned, [STARTED_AGAIN]: '1' }
}

/**
 * Restarts this process with the malloc tunables and V8's young generation
 * cap (heap.ts) when it lacks them (does not return then). Call first thing in `serve`, before the configuration is read
 * (its warnings would be logged twice) and before any file, socket or lock
 * is opened. What execve keeps: the pid (systemd's MAINPID, a supervisor's
 * child), stdio, the environment (NOTIFY_SOCKET) and the arguments; what it
 * resets: signal handlers, installed again by the new start.
 */
export function execWithMallocTuning (): void {
  if (process.platform !== 'linux' || typeof process.execve !== 'function') return
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header
  const env = tunedEnvironment(process.env, header?.glibcVersionRuntime != null)
  if (env == null) return
  // the packaged binary's argv is [binary, binary, ...args]; under node it is [node, script, ...args]
  const args = isSea()
    ? [process.execPath, ...process.argv.slice(2)]
    : [process.execPath, ...process.execArgv, ...process.argv.slice(1)]
  try {
    process.execve(process.execPath, args, env)
  } catch {
    // could not start again (returns only then): serve runs with glibc's and V8's defaults
  }
}
