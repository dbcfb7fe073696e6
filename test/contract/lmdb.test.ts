/** The ledger contract (./ledger-contract.ts) on the LMDB ledger, each test in its own temp dir. */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openLmdbLedger, type LmdbLedger } from '../../src/ledger/lmdb/ledger.js'
import { tempDir } from '../helpers/pind.js'
import { describeLedgerContract, GAP } from './ledger-contract.js'

describeLedgerContract('LMDB', async () => {
  const dir = tempDir('pind-contract-')
  // the file serve opens (src/datadir/layout.ts)
  const path = join(dir, 'ledger.mdb')
  const open = async (): Promise<LmdbLedger> => await openLmdbLedger(path, { graceMs: () => 0 })
  let current = await open()
  return {
    ledger: current,
    reopen: async () => {
      await current.close()
      current = await open()
      return current
    },
    close: async () => {
      await current.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}, {
  // its CID index holds pins not removed only (most of a ledger's pins are removed); no caller needs the removed ones
  knownGaps: [GAP.removedPinsOfCid]
})
