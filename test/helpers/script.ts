/**
 * Runs one of scripts/ in a child node process from the repository's root and collects what
 * it printed: for the tests of the benchmark scripts, which check their output's form.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { ROOT } from '../../scripts/bench-lib.mjs'

export async function runScript (script: string, args: string[]): Promise<{ code: number | null, out: string, err: string }> {
  return await new Promise((resolve) => {
    const p = spawn(process.execPath, [join(ROOT, 'scripts', script), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''; let err = ''
    p.stdout.on('data', (b) => { out += b })
    p.stderr.on('data', (b) => { err += b })
    p.on('exit', (code) => { resolve({ code, out, err }) })
  })
}
