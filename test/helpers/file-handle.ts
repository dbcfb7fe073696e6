import { open } from 'node:fs/promises'
import { vi } from 'vitest'

/** FileHandle's prototype, to spy on its methods (e.g. datasync) for every handle the code under test opens */
export async function fileHandleProto (): Promise<{ datasync: () => Promise<void> }> {
  const fh = await open(process.execPath, 'r')
  await fh.close()
  return Object.getPrototypeOf(fh)
}

/**
 * Holds every fdatasync (of any FileHandle) until `release()`; `started()` counts those begun.
 * Undone by vi.restoreAllMocks().
 */
export async function holdDatasyncs (): Promise<{ release: () => void, started: () => number }> {
  const proto = await fileHandleProto()
  const real = proto.datasync
  let release!: () => void
  const gate = new Promise<void>(resolve => { release = resolve })
  let started = 0
  vi.spyOn(proto, 'datasync').mockImplementation(async function (this: unknown) { started++; await gate; return await real.call(this) })
  return { release, started: () => started }
}
