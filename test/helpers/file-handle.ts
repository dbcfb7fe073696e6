import { open } from 'node:fs/promises'

/** FileHandle's prototype, to spy on its methods (e.g. datasync) for every handle the code under test opens */
export async function fileHandleProto (): Promise<{ datasync: () => Promise<void> }> {
  const fh = await open(process.execPath, 'r')
  await fh.close()
  return Object.getPrototypeOf(fh)
}
