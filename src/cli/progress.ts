/**
 * A one-line progress display on stderr, only when stderr is a terminal
 * (scripts and logs get just the final result). Redraws at most 10×/s.
 */
export interface Progress {
  update(text: string): void
  done(): void
}

export function progressLine (label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (stream.isTTY !== true) return { update () {}, done () {} }
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
    }
  }
}

export function mib (bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`
}
