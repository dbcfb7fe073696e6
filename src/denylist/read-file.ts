/**
 * Reads one .deny file into a CompiledList, streamed: memory holds the
 * compiled tables, one chunk of the file and at most one line (or the
 * header, ≤ 1 MiB) — never the whole file.
 *
 * As the spec says: the header is what comes before a `---` line within the
 * first 1 MiB (no `---` there: no header, every line is a rule); a header
 * that is not valid fails the whole list; lines longer than 2 MiB are an
 * error. A bad rule line is reported (`onProblem`, with its line number) and
 * skipped: the rest of the list still applies.
 */
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { CompiledList } from './compiled.js'
import { HeaderError, parseHeader, type DenylistHeader } from './header.js'
import { parseLine, RuleError } from './rule.js'

export const MAX_HEADER_BYTES = 1024 * 1024
export const MAX_LINE_BYTES = 2 * 1024 * 1024

export interface ReadDenylist {
  list: CompiledList
  header?: DenylistHeader
  /** lines read */
  lines: number
  /** bad lines skipped */
  problems: number
}

export interface LineProblem {
  line: number
  problem: string
}

export { HeaderError }

export async function readDenylistFile (path: string, onProblem: (p: LineProblem) => void = () => {}): Promise<ReadDenylist> {
  // sized for a list of double hashes (50-67 bytes a line: the bulk of large lists), trimmed once read
  const list = new CompiledList(Math.ceil((await stat(path)).size / 50))
  let header: DenylistHeader | undefined
  let problems = 0
  let lineNo = 0
  // the first lines, until `---` (a header) or 1 MiB (no header)
  let pending: string[] | undefined = []
  let pendingBytes = 0

  const rule = (text: string, line: number): void => {
    try {
      const r = parseLine(text)
      if (r != null) list.add(r, line)
    } catch (err) {
      if (!(err instanceof RuleError)) throw err
      problems++
      onProblem({ line, problem: err.message })
    }
  }
  const noHeader = (): void => {
    const lines = pending ?? []
    pending = undefined
    lines.forEach((text, i) => { rule(text, i + 1) })
  }
  const onLine = (text: string): void => {
    lineNo++
    if (pending == null) { rule(text, lineNo); return }
    if (text.trim() === '---') {
      header = parseHeader(pending)
      pending = undefined
      return
    }
    pending.push(text)
    pendingBytes += Buffer.byteLength(text) + 1
    if (pendingBytes > MAX_HEADER_BYTES) noHeader()
  }
  const tooLong = (): void => {
    lineNo++
    problems++
    onProblem({ line: lineNo, problem: `the line is longer than ${MAX_LINE_BYTES} bytes` })
    if (pending != null) noHeader()
  }

  let carry: Buffer | undefined
  let skipping = false
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    let start = 0
    for (let nl = chunk.indexOf(10, start); nl >= 0; nl = chunk.indexOf(10, start)) {
      if (skipping) skipping = false
      else if (carry != null) {
        const bytes = Buffer.concat([carry, chunk.subarray(start, nl)])
        carry = undefined
        if (bytes.length > MAX_LINE_BYTES) tooLong()
        else onLine(stripCr(bytes.toString('utf8')))
      } else if (nl - start > MAX_LINE_BYTES) tooLong()
      else if (pending == null && list.addLegacyHexLine(chunk, start, nl, lineNo + 1)) lineNo++
      else onLine(stripCr(chunk.toString('utf8', start, nl)))
      start = nl + 1
    }
    if (skipping || start === chunk.length) continue
    carry = carry == null ? Buffer.from(chunk.subarray(start)) : Buffer.concat([carry, chunk.subarray(start)])
    if (carry.length > MAX_LINE_BYTES) {
      carry = undefined
      skipping = true
      tooLong()
    }
  }
  if (carry != null) onLine(stripCr(carry.toString('utf8')))
  if (pending != null) noHeader()
  list.trim()
  return { list, ...(header != null ? { header } : {}), lines: lineNo, problems }
}

function stripCr (s: string): string {
  return s.endsWith('\r') ? s.slice(0, -1) : s
}
