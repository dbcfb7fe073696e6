/**
 * The one progress display of the admin commands: a line on stderr, only
 * when stderr is a terminal (scripts and logs get just the final result),
 * redrawn at most 10×/s and cleared when the work ends.
 */
import { thousands } from '../kernel/thousands.js'

export interface Progress {
  update(text: string): void
  done(): void
}

/** `enabled`: a further condition (e.g. not while the output itself goes to the terminal) */
export function progressLine (label: string, opts: { enabled?: boolean, stream?: NodeJS.WriteStream } = {}): Progress {
  const stream = opts.stream ?? process.stderr
  if (stream.isTTY !== true || opts.enabled === false) return { update () {}, done () {} }
  let last = 0
  let shown = false
  return {
    update (text) {
      const now = Date.now()
      if (now - last < 100) return
      last = now
      shown = true
      stream.write(`\r\x1b[2K${label}: ${text}`)
    },
    done () {
      if (shown) stream.write('\r\x1b[2K')
      shown = false
    }
  }
}

export function mib (bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`
}

/** 1234567 → "1,234,567" */
export function count (n: number): string {
  return thousands(n)
}
