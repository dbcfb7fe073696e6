/**
 * The old generation's growth between full collections (`--runtime-heap-growing-percent`):
 * V8's `--heap-growing-percent`, which V8 reads each time it sets the next collection's limit,
 * so it can be set once serve starts (Node does not take it in NODE_OPTIONS). Left unset, V8
 * picks a factor of up to 4 from its own speed. Figures: docs/runtime.md, "Heap growth".
 */
import { setFlagsFromString } from 'node:v8'

export function limitHeapGrowth (percent: number): void {
  if (!Number.isInteger(percent) || percent <= 0) throw new RangeError(`heap growing percent must be a positive integer, not ${percent}`)
  setFlagsFromString(`--heap-growing-percent=${percent}`)
}
