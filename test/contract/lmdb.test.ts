/** The ledger contract (./ledger-contract.ts) and the coordination contract on the LMDB ledger, each test in its own temp dir. */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openLmdbLedger, type LmdbLedger } from '../../src/ledger/lmdb/ledger.js'
import { tempDir } from '../helpers/pind.js'
import { describeCoordinationContract } from './coordination-contract.js'
import { describeLedgerContract, reopenable, type OpenedLedger } from './ledger-contract.js'

async function openLmdb (): Promise<OpenedLedger> {
  const dir = tempDir('pind-contract-')
  // the file serve opens (src/datadir/layout.ts)
  const path = join(dir, 'ledger.mdb')
  return await reopenable(async (): Promise<LmdbLedger> => await openLmdbLedger(path, { graceMs: () => 0 }), async () => { rmSync(dir, { recursive: true, force: true }) })
}

describeLedgerContract('LMDB', openLmdb)
describeCoordinationContract('LMDB', openLmdb)
