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
 * The flag is set at run time (V8 reads it each time it considers growing,
 * so setting it after start-up is honoured): that covers the packaged binary
 * and `node dist/pind.cjs` alike without touching NODE_OPTIONS, which the
 * binary does honour (a V8 flag there, or carried by malloc.ts's re-exec,
 * would work too).
 *
 * Tried and not kept (issue 18): a full collection once the process goes
 * idle after load (`--expose-gc` set at run time, gc() after 15 s of an
 * event loop less than 2% busy). V8's memory reducer already does it within
 * ~10-20 s of the load stopping: in two 5-minute soaks side by side, the
 * heap committed fell 67 -> 52 MiB and ArrayBuffers 37 -> 24 MiB with or
 * without it, and idle RSS was 206 MiB with it against 197 MiB without. What
 * the collection frees mostly stays with glibc (see malloc.ts), so anonymous
 * RSS fell by 7 MiB where 28 MiB were freed.
 */
import { setFlagsFromString } from 'node:v8'

export function holdYoungGeneration (): void {
  setFlagsFromString('--semi-space-growth-factor=1')
}
