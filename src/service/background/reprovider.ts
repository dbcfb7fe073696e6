/**
 * The sweep reprovider: keeps every CID the ledger says this node holds
 * announced on the DHT, by keyspace region (after Kubo's SweepingProvider;
 * the network side is src/ipfs/routing/announcer.ts).
 *
 * Schedule (in the ledger, ProvideSchedule, so it survives restarts): each CID
 * has a due time. A new CID is due when it is added — pinned means announced
 * at once. The loop takes the most overdue CID, explores its region (or, for
 * a lone CID, does one lookup), and announces every CID of the region due
 * within the next half interval along with it. Announced CIDs are next due
 * at their region's slot: a CID at keyspace position x ∈ [0,1) has slots at
 * cycleStart + (n + x)·interval, and the next slot at least half an interval
 * away is taken. So the load spreads evenly over the interval (regions take
 * turns by position, as in Kubo), and no record goes longer than 1.5
 * intervals unrenewed (33 h for 22 h, inside Amino's 48 h). A failed
 * announcement is retried with backoff. Released CIDs (removed, replaced,
 * expired or failed pins) leave the schedule in the ledger transaction that
 * releases them, so they are simply never announced again.
 *
 * Front ends sharing a ledger share its schedule, and so the sweep: each
 * takes the keys it announces (ProvideSchedule.claim: held until announced
 * and rescheduled), so a key is announced by one of them per slot, and
 * records which front end announced it. The records of a front end that
 * stops for good are handed over (./front-end-takeover.ts).
 */
import { bitsOf, hasPrefix, keyFraction, prefixRange } from '../../ipfs/routing/keyspace.js'
import type { Region } from '../../ipfs/routing/region.js'
import type { AnnounceKey, AnnounceOutcome } from '../../ipfs/routing/announcer.js'
import type { ProvideKey, ProvideKind, ProvideSchedule } from '../../ledger/provides.js'
import type { Logger } from '../../kernel/log.js'

export interface Announcer {
  k: number
  region(key: AnnounceKey, signal: AbortSignal): Promise<Region>
  single(key: AnnounceKey, signal: AbortSignal): Promise<Region>
  announce(region: Region, keys: AnnounceKey[], signal: AbortSignal): Promise<AnnounceOutcome>
}

export interface ReproviderOptions {
  keys: ProvideSchedule
  kind: ProvideKind
  announcer: Announcer
  intervalMs: number
  log: Logger
  /** regions worked on at once */
  concurrency?: number
  /** this front end (its peer id), recorded as the announcer of what it announced (ProvideSchedule.reannounce) */
  self?: string
  onRegion?: (r: RegionReport) => void
}

export interface RegionReport {
  prefix: string
  lookups: number
  peers: number
  reachable: number
  provided: number
  failed: number
  ms: number
}

export interface ReproviderStatus {
  strategy: ProvideKind
  intervalSeconds: number
  keys: number
  /** due now or overdue */
  pending: number
  /** how late the most overdue key is, in seconds (0 if none is due) */
  oldestPendingSeconds: number
  /** seconds until the next key is due (0 if some are due now) */
  nextDueSeconds: number | null
  providedSinceStart: number
  failedSinceStart: number
  regionsSinceStart: number
  lookupsSinceStart: number
  running: number
  cycleStart: string | null
  lastRegion: (RegionReport & { at: string }) | null
  /** set while announcing is paused after failures (no DHT peers) */
  pausedUntil: string | null
}

/** a region holding this many due keys or fewer is announced with one lookup per key (Kubo: 2) */
const INDIVIDUAL_THRESHOLD = 2
/** keys announced per region pass (the rest go in the next pass of the same region) */
const MAX_BATCH = 20_000
const FRESH_DELAY_MS = 250
const MAX_SLEEP_MS = 60_000
/** due keys read at a time while looking for one no worker has claimed */
const PICK_BATCH = 64
/**
 * how long a key taken for announcing stays out of other front ends' way
 * (ProvideSchedule.claim): should this one die meanwhile, another takes it
 * after this
 */
const CLAIM_MS = 10 * 60_000
const FIRST_BACKOFF_MS = 5_000
const MAX_BACKOFF_MS = 5 * 60_000

export class Reprovider {
  private readonly abort = new AbortController()
  private readonly workers = new Set<Promise<void>>()
  /** prefixes being worked on: other workers skip keys under them */
  private readonly claims = new Set<string>()
  private loop: Promise<void> | undefined
  private wakeUp: (() => void) | undefined
  private woken = false
  private cycleStart: number | undefined
  private pausedUntil = 0
  private failures = 0
  /** average region prefix length seen, to claim a likely region before exploring it */
  private prefixLen = 0
  private readonly stats = { provided: 0, failed: 0, regions: 0, lookups: 0 }
  private lastRegion: (RegionReport & { at: string }) | null = null
  private unsubscribe: (() => void) | undefined

  constructor (private readonly o: ReproviderOptions) {}

  start (): void {
    this.unsubscribe = this.o.keys.onNewKeys(() => { setTimeout(() => { this.wake() }, FRESH_DELAY_MS).unref() })
    this.loop = this.run().catch((err: Error) => { this.o.log.error('reprovider stopped unexpectedly', { error: err }) })
  }

  wake (): void {
    this.woken = true
    this.wakeUp?.()
  }

  async stop (): Promise<void> {
    this.unsubscribe?.()
    this.abort.abort(new Error('shutting down'))
    this.wake()
    await this.loop
    await Promise.allSettled([...this.workers])
  }

  async status (now = Date.now()): Promise<ReproviderStatus> {
    const kind = this.o.kind
    const first = await this.o.keys.firstDue(kind)
    return {
      strategy: kind,
      intervalSeconds: this.o.intervalMs / 1000,
      keys: await this.o.keys.count(kind),
      pending: await this.o.keys.countDue(kind, now),
      oldestPendingSeconds: first != null && first <= now ? Math.round((now - first) / 1000) : 0,
      nextDueSeconds: first == null ? null : Math.max(0, Math.round((first - now) / 1000)),
      providedSinceStart: this.stats.provided,
      failedSinceStart: this.stats.failed,
      regionsSinceStart: this.stats.regions,
      lookupsSinceStart: this.stats.lookups,
      running: this.workers.size,
      cycleStart: this.cycleStart != null ? new Date(this.cycleStart).toISOString() : null,
      lastRegion: this.lastRegion,
      pausedUntil: this.pausedUntil > now ? new Date(this.pausedUntil).toISOString() : null
    }
  }

  private async run (): Promise<void> {
    this.cycleStart = await this.o.keys.cycleStart(Date.now())
    const concurrency = this.o.concurrency ?? 4
    const signal = this.abort.signal
    while (!signal.aborted) {
      const now = Date.now()
      if (this.pausedUntil > now) { await this.sleep(this.pausedUntil - now); continue }
      if (this.workers.size >= concurrency) { await this.sleep(MAX_SLEEP_MS); continue }
      const next = await this.pick(now)
      if (next == null) {
        const first = this.workers.size > 0 ? undefined : await this.o.keys.firstDue(this.o.kind)
        await this.sleep(first != null ? Math.max(first - now, 10) : MAX_SLEEP_MS)
        continue
      }
      const claim = bitsOf(next.kad, this.prefixLen)
      this.claims.add(claim)
      const w: Promise<void> = this.work(next, claim).finally(() => {
        this.workers.delete(w)
        this.wake()
      })
      this.workers.add(w)
    }
  }

  /** The most overdue key no worker (here or on a front end sharing the schedule) is busy with, taken. */
  private async pick (now: number): Promise<ProvideKey | undefined> {
    let after: ProvideKey | undefined
    for (;;) {
      const keys = await this.o.keys.due(this.o.kind, now, PICK_BATCH, after)
      for (const key of keys) {
        if ([...this.claims].some(c => hasPrefix(key.kad, c))) continue
        if ((await this.o.keys.claim(this.o.kind, [key], now + CLAIM_MS)).length === 1) return key
      }
      if (keys.length < PICK_BATCH) return undefined
      after = keys[keys.length - 1]
    }
  }

  private async work (key: ProvideKey, claim: string): Promise<void> {
    const t0 = Date.now()
    const signal = this.abort.signal
    let held = claim
    /** keys taken in the schedule and not yet rescheduled: due again at once if this work fails */
    let taken: ProvideKey[] = [key]
    try {
      const half = t0 + this.o.intervalMs / 2
      // a lone key (or two) is not worth exploring a region for
      const near = await this.collect(prefixRange(claim), half, INDIVIDUAL_THRESHOLD + 1)
      const region = near.length <= INDIVIDUAL_THRESHOLD
        ? await this.o.announcer.single(key, signal)
        : await this.o.announcer.region(key, signal)
      if (region.prefix !== held) {
        this.claims.add(region.prefix)
        this.claims.delete(held)
        held = region.prefix
      }
      if (region.prefix.length < 256) this.prefixLen = Math.round((this.prefixLen * 3 + region.prefix.length) / 4)
      // the region's other due keys, each taken unless another front end took it first
      const others = (await this.collect(prefixRange(region.prefix), half, MAX_BATCH)).filter(k => !k.kad.equals(key.kad))
      const got = new Set((await this.o.keys.claim(this.o.kind, others, Date.now() + CLAIM_MS)).map(k => k.toString('hex')))
      const batch = [key, ...others.filter(k => got.has(k.kad.toString('hex')))]
      taken = batch
      const out = await this.o.announcer.announce(region, batch, signal)
      const now = Date.now()
      await this.o.keys.reschedule(this.o.kind, [
        ...out.provided.map(k => ({ kad: k.kad, due: this.nextSlot(k.kad, now), at: now, ...(this.o.self != null ? { by: this.o.self } : {}) })),
        ...out.failed.map(k => ({ kad: k.kad, due: now + this.backoff() }))
      ])
      taken = []
      this.stats.provided += out.provided.length
      this.stats.failed += out.failed.length
      this.stats.regions++
      this.stats.lookups += region.lookups
      if (out.failed.length > 0 && out.provided.length === 0) this.failures++
      else this.failures = 0
      const report: RegionReport = { prefix: region.prefix.length >= 256 ? '(one key)' : region.prefix, lookups: region.lookups, peers: out.peers, reachable: out.reachable, provided: out.provided.length, failed: out.failed.length, ms: now - t0 }
      this.lastRegion = { ...report, at: new Date(now).toISOString() }
      this.o.onRegion?.(report)
      this.o.log.debug('region announced', { ...report, ...(Object.keys(out.errors ?? {}).length > 0 ? { errors: out.errors } : {}) })
    } catch (err) {
      // what was taken and not announced is due again, for this front end or another
      const now = Date.now()
      await this.o.keys.reschedule(this.o.kind, taken.map(k => ({ kad: k.kad, due: now }))).catch(() => {})
      if (signal.aborted) return
      // no peers to ask (offline, or not bootstrapped yet): everything waits, with backoff
      this.failures++
      this.pausedUntil = Date.now() + this.backoff()
      this.o.log.info('announcing paused: the DHT could not be queried', { error: (err as Error).message, until: new Date(this.pausedUntil).toISOString() })
    } finally {
      this.claims.delete(held)
    }
  }

  /** Keys of a range due before `until`, up to `limit`. */
  private async collect (range: ReturnType<typeof prefixRange>, until: number, limit: number): Promise<ProvideKey[]> {
    const out: ProvideKey[] = []
    // announced less than half an interval ago (by another worker or front end, just now): not again yet
    const recent = until - this.o.intervalMs
    for (const k of await this.o.keys.inRange(this.o.kind, range)) {
      if (k.due > until || k.at > recent) continue
      out.push(k)
      if (out.length >= limit) break
    }
    return out
  }

  /** The key's first slot at least half an interval from now. */
  private nextSlot (kad: Buffer, now: number): number {
    const T = this.o.intervalMs
    const start = this.cycleStart ?? now
    const x = keyFraction(kad)
    const n = Math.ceil((now + T / 2 - start) / T - x)
    return Math.round(start + (n + x) * T)
  }

  private backoff (): number {
    return Math.min(FIRST_BACKOFF_MS * 2 ** Math.min(Math.max(this.failures - 1, 0), 10), MAX_BACKOFF_MS, this.o.intervalMs)
  }

  private async sleep (ms: number): Promise<void> {
    if (this.abort.signal.aborted) return
    if (this.woken) { this.woken = false; return }
    await new Promise<void>(resolve => {
      const t = setTimeout(done, Math.min(ms, MAX_SLEEP_MS))
      function done (): void { clearTimeout(t); resolve() }
      this.wakeUp = done
    })
    this.wakeUp = undefined
    this.woken = false
  }
}
