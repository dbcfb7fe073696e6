/**
 * What an upload is writing straight to the block store (direct-import.ts:
 * one with a ticket, or a paid one with S3 as the store), one journal file per
 * upload: a header naming the ticket (empty for a paid upload),
 * then one line per block, appended before the block's write begins. The
 * upload removes its journal once it has ended (its pin claims the blocks, or
 * its blocks that no pin references are deleted again). A journal found at
 * start is an upload a crash cut: its blocks are judged as a failed upload's
 * (service/uploads/ticket-upload.ts, recoverTicketWrites); a paid upload's
 * blocks its settlement note names are held by the note.
 *
 * The lines are written, not fsync'd: a killed process leaves them in the
 * page cache and they survive it; after a power loss a block may outlive its
 * line, and the next gc removes it.
 *
 *   pind-direct-writes 1 <ticket id, or nothing>
 *   <cid> <bytes>
 */
import { randomUUID } from 'node:crypto'
import { mkdir, open, readdir, readFile, rm, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'

const HEADER = 'pind-direct-writes 1'
const NAME = /^[0-9a-f-]{36}\.journal$/

export interface WriteJournal {
  /** appends a block's line (resolves once the file has it) */
  note: (cid: CID, bytes: number) => Promise<void>
  /** closes and deletes the journal (its blocks are settled) */
  remove: () => Promise<void>
}

/** a journal left by an earlier process */
export interface LeftJournal {
  file: string
  ticket: string
  blocks: Array<{ cid: CID, bytes: number }>
}

export class WriteJournals {
  constructor (private readonly dir: string) {}

  async open (ticket: string): Promise<WriteJournal> {
    await mkdir(this.dir, { recursive: true })
    const file = join(this.dir, `${randomUUID()}.journal`)
    const fh: FileHandle = await open(file, 'wx')
    await fh.write(`${HEADER} ${ticket}\n`)
    let closed = false
    // lines go in order, one write at a time (appends from parallel writes would interleave)
    let tail: Promise<unknown> = Promise.resolve()
    return {
      note: async (cid, bytes) => {
        const line = `${cid.toString()} ${bytes}\n`
        const w = tail.then(async () => {
          if (closed) throw new Error('this write journal is closed')
          await fh.write(line)
        })
        tail = w.catch(() => {})
        await w
      },
      remove: async () => {
        if (closed) return
        closed = true
        await tail
        await fh.close()
        await rm(file, { force: true })
      }
    }
  }

  /** the journals an earlier process left (a torn last line is dropped) */
  async left (): Promise<LeftJournal[]> {
    let names: string[]
    try {
      names = (await readdir(this.dir)).filter(n => NAME.test(n))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw err
    }
    const out: LeftJournal[] = []
    for (const n of names) {
      const file = join(this.dir, n)
      const lines = (await readFile(file, 'utf8')).split('\n')
      const head = lines[0] ?? ''
      const ticket = head.startsWith(`${HEADER} `) ? head.slice(HEADER.length + 1) : ''
      const blocks: LeftJournal['blocks'] = []
      // the last piece has no newline after it: torn, or empty
      for (const line of lines.slice(1, -1)) {
        const [c, b] = line.split(' ')
        const bytes = Number(b)
        if (!Number.isSafeInteger(bytes) || bytes < 0) continue
        try {
          blocks.push({ cid: CID.parse(c ?? ''), bytes })
        } catch {}
      }
      out.push({ file, ticket, blocks })
    }
    return out
  }

  /** deletes a journal whose blocks are settled */
  async drop (j: LeftJournal): Promise<void> {
    await rm(j.file, { force: true })
  }
}
