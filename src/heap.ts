/**
 * V8 heap settings for the long-running `serve` process.
 *
 * V8 doubles the young generation whenever enough objects survive its
 * scavenges, up to 2 x 64 MiB on a machine with memory to spare, and rarely
 * gives it back. A server streaming uploads keeps a steady trickle of
 * survivors (stream buffers, promises in flight), so the young generation
 * grows step by step for no gain: measured over ten 100 MB paid uploads,
 * peak RSS 151 -> 128 MiB with it held at its start-up size, and the same
 * CPU time and wall time per upload (scripts/bench-upload.mjs).
 *
 * Held at its start-up size the new space is 2 MiB (two 1 MiB semi-spaces),
 * so `--max-semi-space-size` has nothing left to bound (issue 18).
 *
 * Measured later (issue 18): in the packaged binary that start-up size is
 * 16 MiB (/metrics all through a soak), since loading the bundle grows the
 * young generation before `serve` runs this. Tried and not kept: one full
 * collection once serve has started, to hold it at 2 MiB from the start.
 * Memory was lower (soak 5 8 side by side, load average 10: anonymous at
 * start 53 vs 73 MiB, mean RSS under load 185 vs 228 MiB, max 204 vs
 * 280), but the small young generation promotes what would have died young:
 * by minute 4, 3,458 vs 893 scavenges, 541 vs 165 mark-compacts, 25 vs
 * 13 s of GC, 555 vs 885 uploads done. Beware: an idle spell has the same
 * effect today. V8's memory reducer (and `collectWhenIdle`, below) shrink
 * the young generation to its minimum when the process goes quiet (1 MiB
 * seen at idle on main too), and this flag then holds it there for the next
 * load. A bound instead of a hold (`--max-semi-space-size`, which V8 reads
 * only at start: NODE_OPTIONS in malloc.ts's re-exec) is the thing to try.
 *
 * The flag was set at run time (V8 reads it each time it considers growing,
 * so setting it after start-up is honoured): that covered the packaged binary
 * and `node dist/pind.cjs` alike without touching NODE_OPTIONS.
 *
 * Now (issue 18, the cap): a bound instead of the hold. The young generation
 * grows again after an idle spell, up to `--max-semi-space-size`
 * (`YOUNG_GENERATION_CAP`, below), which V8 reads only when the heap is set
 * up: `serve` carries it in NODE_OPTIONS through malloc.ts's start-again
 * (Node 24 accepts this flag in NODE_OPTIONS, not --min-semi-space-size; the
 * packaged binary honours NODE_OPTIONS; `node dist/pind.cjs` too). An
 * operator's own --max-semi-space-size (or --max-heap-size) in NODE_OPTIONS
 * or on node's command line wins.
 *
 * The size, chosen with scripts/bench-idle.mjs (one run, load average 7-10:
 * bursts of 8 clients x 30 paid uploads of 4 KiB-8 MiB, 344 MB, right after
 * start, again at once, and twice after an idle spell; main's binary, which
 * holds the young generation, against this one with caps of 4, 8, 16 and 64
 * MiB, V8's default, side by side). Main's held young generation was at 2 MiB
 * in every burst, even the first: the services start one after another, and
 * V8's memory reducer shrinks it within seconds of quiet after start-up.
 * Against the hold, per burst:
 *   - 8 MiB: 0.18-0.21x the scavenges (135-146 vs 668-761), RSS max
 *     0.76-0.96x, mean 0.79-0.91x;
 *   - 4 MiB: 0.34-0.38x the scavenges, RSS max 0.64-0.93x;
 *   - 16 MiB: 0.09-0.12x the scavenges, RSS max 0.78-0.98x;
 *   - 64 MiB (uncapped, the young generation at 2 x 64): 0.02-0.08x the
 *     scavenges, RSS max 1.12-1.37x, mean 0.99-1.27x.
 * Mark-compacts were 0-7 a burst for all, within the noise. The hold is not
 * the smallest in RSS: what a 2 MiB young generation promotes fills the old
 * one. Burst times were within the shared machine's noise (8 MiB 0.82-1.12x
 * of the hold; bursts of one build differ by up to 40%). 8 MiB: a fifth of
 * the hold's scavenges and less memory; 16 halves the scavenges again for
 * ~10% more RSS; no cap costs 20-37% more RSS.
 *
 * Now 4 MiB (issue 18, the anonymous peak under the soak). Sampled every
 * 0.5-1 s through 4-minute soaks (16 + 8 clients), the new space sat at its
 * cap, 16 MiB, all through the load (heap total 65-80 MiB of an anonymous
 * 110-150), while the peaks above that level were transient mappings of
 * 1-32 MiB lasting under a second: not upload chunk buffers (0-5 of them at
 * the peaks: ipfs/chunk-budget.ts), not gateway reads, not pin fetches (the
 * peaks were as high without either). The young generation is the part of
 * the level a setting moves. Two pairs of 5-minute soaks side by side
 * (`soak.mjs 5 16`, main's binary with 8 MiB against this one with 4 MiB
 * and the chunk budget, which never made an upload wait in them; load
 * average 7.0 and 7.5; 8 MiB first):
 *   - anonymous mean under load 126.6 vs 118.3 and 126.0 vs 112.4 MiB;
 *   - anonymous max (the soak's 10 s samples) 142.4 vs 140.1 and 146.4 vs
 *     125.4 MiB; sampled every second 154.7 vs 144.3 and 154.0 vs 146.4;
 *   - heap total max 80.2 vs 69.8 and 79.2 vs 67.6 MiB; ArrayBuffers max
 *     57.5 vs 61.8 and 50.0 vs 52.3;
 *   - anonymous at start 68.0 vs 60.4 MiB, idle after the load 76.6 vs
 *     76.2 and 76.2 vs 75.5;
 *   - requests 13,828 vs 13,825 and 13,134 vs 13,409; paid writes 1,937 vs
 *     1,951 and 1,833 vs 1,875, all verified, 0 errors; upload p50 963 vs
 *     931 and 995 vs 1,041 ms, p99 2,721 vs 2,853 and 3,348 vs 3,165 ms.
 * So 8-14 MiB less on average and 2-21 MiB less at the peak, for the same
 * work. (Bytes uploaded were 8.41 vs 7.62 and 8.52 vs 7.34 GB: the soak
 * draws each upload's size at random, log-uniform up to 60 MB, so a few of
 * the largest decide it; the uploads done and their latencies were the
 * same.) bench-idle's bursts above had 4 MiB at 0.34-0.38x the hold's
 * scavenges (8 MiB 0.18-0.21x) and RSS max 0.64-0.93x (8 MiB 0.76-0.96x).
 */
import { performance } from 'node:perf_hooks'
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/** MiB per semi-space: the young generation (two of them) grows to at most twice this */
export const SEMI_SPACE_MAX_MIB = 4
export const YOUNG_GENERATION_CAP = `--max-semi-space-size=${SEMI_SPACE_MAX_MIB}`

/**
 * NODE_OPTIONS with the young generation's cap added to what is there, or
 * undefined when the operator already sized the young generation (or the
 * whole heap, which V8 then splits itself).
 */
export function cappedNodeOptions (current: string | undefined): string | undefined {
  const options = (current ?? '').trim()
  if (/(^|\s)--max[-_](semi[-_]space|heap)[-_]size(=|\s|$)/.test(options)) return undefined
  return options === '' ? YOUNG_GENERATION_CAP : `${options} ${YOUNG_GENERATION_CAP}`
}

/**
 * The old generation's growth, as a percentage of what survived the last
 * full collection: V8 sets the next collection's limit at that size times a
 * factor it picks from its own speed (up to 4 when collections are cheap
 * against the allocation rate). Issue 18, measured after gateway reads began
 * freeing their pieces once written (src/buffers.ts): dead ArrayBuffers used
 * to start a full collection every ~64 MiB of churn, which also kept the old
 * generation small (5-minute pair: 463 major collections vs 84); without
 * them the heap grew to V8's own limit, 92-113 MiB against 72, and the
 * anonymous peak fell by less than the ArrayBuffers did. In the 30-minute
 * soak of that tree (16 + 8 clients) heap total reached 151 MiB by minute 8
 * and RSS 328 MiB (anonymous 254).
 *
 * Three 5-minute soaks side by side (`soak.mjs 5 16`, the same binary, load
 * average ~10): V8's own factor / 1.5 / 1.2 gave RSS max 258 / 205 / 200 MiB,
 * anonymous max 190 / 139 / 132, ArrayBuffers max 90 / 52 / 46 (a full
 * collection also frees the dead buffers), heap total max 107 / 79 / 75,
 * mean RSS under load 206 / 187 / 187, requests 10,116 / 10,443 / 10,090 and
 * paid writes 1,266 / 1,294 / 1,230, upload p50 1.50 / 1.52 / 1.57 s: the
 * same work for a quarter less memory at the peak. 1.5 is kept (1.2 saved
 * little more, for more full collections).
 *
 * Set at run time: V8 reads it each time it sets a limit, and Node does not
 * take it in NODE_OPTIONS.
 */
export const HEAP_GROWING_PERCENT = 50

export function limitHeapGrowth (): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
}

export interface IdleCollection {
  /** full collections run so far */
  readonly runs: number
  stop(): void
}

/**
 * One full garbage collection each time the process goes quiet after work.
 *
 * V8 frees an ArrayBuffer's memory (a block read for the gateway, a piece of
 * an upload's body) only when a collection finds its wrapper dead, and once
 * the load stops nothing allocates enough to trigger one: its memory reducer
 * gets to it 20-100 s later. In a soak (scripts/soak.mjs, 8 + 4 clients,
 * glibc's mmap threshold at 16 KiB, see malloc.ts) the service sat at
 * 238 MiB (anonymous 161 MiB, ArrayBuffers 73 MiB, heap committed 72 MiB)
 * for 100 s after the load until that collection brought it to 169 MiB
 * (92, 33, 50 MiB): with buffers of 16 KiB and more mapped on their own, what
 * a collection frees goes back to the kernel (malloc_trim(0) then found
 * 5 MiB more to return). This runs it once the process is quiet.
 *
 * Issue 18, a later step: that collection was a plain gc(), one
 * mark-compact, which leaves V8's spaces as large as the load made them.
 * At idle after a soak (5 min, 8 + 4 clients) the process's 256 KiB V8 page
 * mappings held 64-69 MiB resident against 56 MiB of heap committed and
 * 45 used. It is now the last-resort collection (`fullCollection`, below).
 * Side by side at the same moment, ~70 s after the load (load average 11):
 * V8 pages 34 vs 64 MiB resident, anonymous memory 91 vs 126 MiB, RSS 166
 * vs 202 MiB (together with network.ts's kept blocks let go, which is
 * ~5 MiB of it).
 *
 * Quiet means the event loop busy less than `idleUtilization` of the time
 * for `quietChecks` checks in a row, `checkMs` apart, after at least one
 * check busier than `busyUtilization`: once per stretch of work, never
 * under load, not again while idle. The timer does not keep the process up.
 *
 * Work too light to count as such also grows the heap: an archiver pass at
 * idle (src/service/archiver.ts) moving the last removals of a load grew it
 * by 4.5 MiB after the idle collection, which stayed (issue 18: the soak's
 * idle reading 159 MiB, against 155 before that pass). So the heap (the
 * young generation left out) growing by `regrowBytes` since the last
 * collection counts as work too.
 */
export function collectWhenIdle (opts: { checkMs?: number, quietChecks?: number, busyUtilization?: number, idleUtilization?: number, regrowBytes?: number, heapSize?: () => number, collect?: () => void } = {}): IdleCollection {
  const { checkMs = 5_000, quietChecks = 3, busyUtilization = 0.05, idleUtilization = 0.02, regrowBytes = 4 * 1024 * 1024 } = opts
  const gc = opts.collect ?? fullCollection()
  // the young generation left out: it grows back to its cap after the collection with any trickle of work
  const heapSize = opts.heapSize ?? (() => getHeapStatistics().total_heap_size - (getHeapSpaceStatistics().find(sp => sp.space_name === 'new_space')?.space_size ?? 0))
  /** the heap's size after the last collection */
  let collectedAt: number | undefined
  let last = performance.eventLoopUtilization()
  let worked = false
  let quiet = 0
  let runs = 0
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const utilization = performance.eventLoopUtilization(now, last).utilization
    last = now
    if (utilization >= busyUtilization) { worked = true; quiet = 0; return }
    if (utilization >= idleUtilization) { quiet = 0; return }
    if (!worked && collectedAt != null && heapSize() - collectedAt >= regrowBytes) worked = true
    if (!worked || ++quiet < quietChecks) return
    worked = false
    quiet = 0
    gc()
    runs++
    collectedAt = heapSize()
    // the collection's own time is not work
    last = performance.eventLoopUtilization()
  }, checkMs)
  timer.unref()
  return { get runs () { return runs }, stop: () => { clearInterval(timer) } }
}

/**
 * The collection run when the process goes quiet: V8's "last resort" full
 * collection, CollectAllAvailableGarbage (the gc extension's
 * `{ type: 'major', execution: 'sync', flavor: 'last-resort' }`, in V8 since
 * 2023; Node 24's V8 13.6 has it). A plain `gc()` is one mark-compact that
 * leaves the spaces as large as the load made them; this one runs
 * mark-compacts with the memory-reducing flags until nothing more dies
 * (up to 7; 2 when idle), compacts the old generation, shrinks the young
 * one back to its minimum and unmaps the pages V8 pooled for reuse. In a
 * process that grew its young generation to 64 MiB with 50 MiB of old
 * space: RSS 153 MiB after a plain gc(), 58 MiB after this one (heap
 * committed 80 vs 6 MiB). Its cost, ~10 ms a pass on pind's ~45 MiB heap,
 * is paid once per stretch of work, when nothing waits.
 *
 * `--expose-gc` is set at run time and the gc function taken from a context
 * made after it.
 */
export function fullCollection (): () => void {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as (options?: { type: string, execution: string, flavor: string }) => void
  return () => { gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }) }
}
