/**
 * What other processes sharing the database committed, told to this one's
 * watchers (what serves blocks from memory, the fetcher, the denials). A
 * write transaction with changes adds a row to `changes` and notifies
 * `pind_changes` with its sequence number (publish); PostgreSQL delivers the
 * notification to every listener once the transaction commits, never for one
 * rolled back, in commit order. This process listens on a connection of its
 * own, reads each row named and tells its watchers (its own rows it told at
 * commit already).
 *
 * A notification sent while the connection was down is lost: after a
 * reconnection the watchers are told that changes may have been missed
 * (`lost`), and they read everything again. Rows are kept for ten minutes:
 * a listener reads its row within a round trip of the notification.
 */
import pg from 'pg'
import type { Tx } from './tx.js'
import { ChangeFeed, TxChanges, type ChangesBody } from './tx.js'

const CHANNEL = 'pind_changes'
/** how long a row of `changes` is kept (every listener has read it long before) */
const KEEP_MINUTES = 10
const PRUNE_EVERY_MS = 5 * 60_000
/** the longest wait between two attempts to listen again */
const MAX_BACKOFF_MS = 10_000

/** Adds the transaction's changes for other processes (before COMMIT: they are sent only if it commits). */
export async function publish (tx: Tx, origin: string, changes: TxChanges): Promise<void> {
  if (!changes.any) return
  const seq = (await tx.q<{ seq: string }>('INSERT INTO changes (origin, body) VALUES ($1, $2) RETURNING seq', [origin, JSON.stringify(changes.toBody())])).rows[0]?.seq
  await tx.q('SELECT pg_notify($1, $2)', [CHANNEL, `${origin} ${seq ?? ''}`])
}

export interface RemoteFeedOptions {
  /** a connection of its own (a pool's are lent out and come back without their LISTEN) */
  connect: () => pg.Client
  /** the pool, for reading the rows */
  pool: pg.Pool
  /** this process's origin: its own rows are skipped */
  origin: string
  feed: ChangeFeed
}

export class RemoteFeed {
  private client: pg.Client | undefined
  private closed = false
  private retry: NodeJS.Timeout | undefined
  private readonly prune: NodeJS.Timeout
  private backoff = 250
  /** rows read one after another, in the order their notifications came */
  private queue: Promise<void> = Promise.resolve()

  constructor (private readonly o: RemoteFeedOptions) {
    this.prune = setInterval(() => {
      o.pool.query(`DELETE FROM changes WHERE at < now() - interval '${KEEP_MINUTES} minutes'`).catch(() => {})
    }, PRUNE_EVERY_MS)
    this.prune.unref()
  }

  /** listens (the first time: before the ledger is handed out, so nothing committed after it is missed) */
  async start (): Promise<void> {
    await this.listen()
  }

  async close (): Promise<void> {
    this.closed = true
    clearTimeout(this.retry)
    clearInterval(this.prune)
    const c = this.client
    this.client = undefined
    await c?.end().catch(() => {})
    await this.queue
  }

  private async listen (): Promise<void> {
    const c = this.o.connect()
    c.on('notification', (msg) => {
      if (msg.channel !== CHANNEL || msg.payload == null) return
      const [origin, seq] = msg.payload.split(' ')
      if (origin === this.o.origin || seq == null || seq === '') return
      this.queue = this.queue.then(async () => { await this.read(seq) })
    })
    c.on('error', () => { this.lost(c) })
    c.on('end', () => { this.lost(c) })
    try {
      await c.connect()
      await c.query(`LISTEN ${CHANNEL}`)
    } catch (err) {
      await c.end().catch(() => {})
      throw err
    }
    this.client = c
    this.backoff = 250
  }

  private async read (seq: string): Promise<void> {
    try {
      const row = (await this.o.pool.query<{ body: ChangesBody }>('SELECT body FROM changes WHERE seq = $1', [seq])).rows[0]
      if (row != null) this.o.feed.tellRemote(TxChanges.fromBody(row.body))
    } catch {
      // the row could not be read: whatever it said is read again with everything else
      this.o.feed.tellLost()
    }
  }

  /** the listening connection went: listen again, then tell the watchers they may have missed changes */
  private lost (c: pg.Client): void {
    if (this.client !== c || this.closed) return
    this.client = undefined
    c.end().catch(() => {})
    const again = (): void => {
      if (this.closed) return
      this.listen().then(() => { this.o.feed.tellLost() }, () => {
        this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS)
        this.retry = setTimeout(again, this.backoff)
        this.retry.unref()
      })
    }
    this.retry = setTimeout(again, this.backoff)
    this.retry.unref()
  }
}
