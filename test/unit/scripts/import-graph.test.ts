/**
 * `npm run graph` (scripts/import-graph.mjs): the folder graph of src/ and
 * its check that nothing imports upward (README, "Source layout").
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const SCRIPT = new URL('../../../scripts/import-graph.mjs', import.meta.url).pathname
const REPO = new URL('../../..', import.meta.url).pathname

interface Upward { file: string, line: number, imports: string, from: string, to: string, why: string }
interface Report { edges: Array<{ from: string, to: string, count: number }>, upward: Upward[] }

async function graph (root: string): Promise<{ code: number, report: Report }> {
  try {
    const { stdout } = await run(process.execPath, [SCRIPT, '--root', root, '--json'])
    return { code: 0, report: JSON.parse(stdout) as Report }
  } catch (err) {
    const e = err as { code: number, stdout: string }
    return { code: e.code, report: JSON.parse(e.stdout) as Report }
  }
}

const dirs: string[] = []
function tree (files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'pind-graph-'))
  dirs.push(root)
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }) })

describe('import graph', () => {
  it('src/ has no upward import', async () => {
    const { report } = await graph(REPO)
    expect(report.edges.length).toBeGreaterThan(20)
    expect(report.edges).toContainEqual(expect.objectContaining({ from: 'service', to: 'ledger' }))
    expect(report.upward).toEqual([])
  })

  it('fails on a component importing the core, and on the core importing a shell', async () => {
    const root = tree({
      'src/ledger/pins.ts': "import { x } from '../service/use.js'\nexport const y = x\n",
      'src/service/use.ts': "import type { R } from '../http/router.js'\nexport const x = 1 as unknown as R\n",
      'src/http/router.ts': "import { x } from '../service/use.js'\nexport type R = typeof x\n",
      // a comment or a string that looks like an import is not one
      'src/ipfs/node.ts': "// import '../service/use.js'\nexport const s = \"import '../cli/x.js'\"\n"
    })
    const { code, report } = await graph(root)
    expect(code).toBe(1)
    expect(report.upward.map(u => `${u.file}:${u.line} ${u.from}→${u.to}`).sort()).toEqual([
      'src/ledger/pins.ts:1 ledger→service',
      'src/service/use.ts:1 service→http'
    ])
    expect(report.edges).toContainEqual({ from: 'http', to: 'service', count: 1 })
  })

  it('passes a tree whose imports point down', async () => {
    const root = tree({
      'src/cli/gc.ts': "import { run } from '../service/gc.js'\nrun()\n",
      'src/service/gc.ts': "import { open } from '../ledger/open.js'\nexport const run = open\n",
      'src/ledger/open.ts': 'export function open (): void {}\n'
    })
    const { code, report } = await graph(root)
    expect(code).toBe(0)
    expect(report.upward).toEqual([])
    expect(report.edges).toEqual([{ from: 'cli', to: 'service', count: 1 }, { from: 'service', to: 'ledger', count: 1 }])
  })

  it('fails on a file outside the LMDB implementation importing it or lmdb; the composition root may', async () => {
    const root = tree({
      'src/ledger/lmdb/pins.ts': "import { open } from 'lmdb'\nexport const p = open\n",
      'src/ledger/pins.ts': 'export interface PinLedger { x: number }\n',
      'src/service/gc.ts': "import { p } from '../ledger/lmdb/pins.js'\nimport type { PinLedger } from '../ledger/pins.js'\nexport const q: PinLedger | typeof p = p\n",
      'src/ipfs/store.ts': "import { open } from 'lmdb'\nexport const s = open\n",
      'src/app/core.ts': "import { p } from '../ledger/lmdb/pins.js'\nexport const c = p\n"
    })
    const { code, report } = await graph(root)
    expect(code).toBe(1)
    expect(report.upward.map(u => `${u.file}:${u.line} ${u.imports}`).sort()).toEqual([
      'src/ipfs/store.ts:1 lmdb',
      'src/service/gc.ts:1 ../ledger/lmdb/pins.js'
    ])
  })

  it('fails on a file outside the PostgreSQL implementation importing it or pg; the composition root may', async () => {
    const root = tree({
      'src/ledger/postgres/ledger.ts': "import pg from 'pg'\nexport const l = pg\n",
      'src/ledger/pins.ts': 'export interface PinLedger { x: number }\n',
      'src/service/gc.ts': "import { l } from '../ledger/postgres/ledger.js'\nexport const q = l\n",
      'src/ledger/lmdb/open.ts': "import pg from 'pg'\nexport const o = pg\n",
      'src/metrics/db.ts': "import type { Pool } from 'pg'\nexport type P = Pool\n",
      'src/app/core.ts': "import { l } from '../ledger/postgres/ledger.js'\nexport const c = l\n"
    })
    const { code, report } = await graph(root)
    expect(code).toBe(1)
    expect(report.upward.map(u => `${u.file}:${u.line} ${u.imports}`).sort()).toEqual([
      'src/ledger/lmdb/open.ts:1 pg',
      'src/metrics/db.ts:1 pg',
      'src/service/gc.ts:1 ../ledger/postgres/ledger.js'
    ])
  })

  it('lets the disk backend\'s packed small blocks use lmdb, and only the block store import them', async () => {
    const root = tree({
      'src/ipfs/small-blocks.ts': "import { open } from 'lmdb'\nexport const s = open\n",
      'src/ipfs/fs-backend.ts': "import { s } from './small-blocks.js'\nexport const f = s\n",
      'src/ipfs/other.ts': "import { open } from 'lmdb'\nexport const o = open\n",
      'src/ledger/lmdb/pins.ts': "import { open } from 'lmdb'\nexport const p = open\n",
      'src/service/gc.ts': "import { s } from '../ipfs/small-blocks.js'\nexport const g = s\n"
    })
    const { code, report } = await graph(root)
    expect(code).toBe(1)
    expect(report.upward.map(u => `${u.file}:${u.line} ${u.imports}`).sort()).toEqual([
      'src/ipfs/other.ts:1 lmdb',
      'src/service/gc.ts:1 ../ipfs/small-blocks.js'
    ])
  })
})
