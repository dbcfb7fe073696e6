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
 * The flag is set at run time because the packaged binary (pkg's SEA) takes
 * no V8 flags; V8 reads it each time it considers growing, so setting it
 * after start-up is honoured.
 */
import { setFlagsFromString } from 'node:v8'

export function holdYoungGeneration (): void {
  setFlagsFromString('--semi-space-growth-factor=1')
}
