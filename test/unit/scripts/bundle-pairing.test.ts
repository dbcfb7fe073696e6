/**
 * The binary's two bundles go together (scripts/bundle.mjs --cli, scripts/package-binary.mjs): a CLI
 * bundle built from other sources than the whole bundle beside it, or none, is refused before pkg
 * runs, and --cli refuses to build without the whole bundle it is paired with. A bundle the binary's
 * entry cannot take as V8's source as it is (not ASCII, not wrapped) is refused too.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { BUNDLE, ROOT, tempDir } from '../../helpers/pind.js'

const run = (script: string, args: string[]): { status: number | null, err: string } => {
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', script), ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 })
  return { status: r.status, err: r.stderr }
}

describe('the CLI bundle and the whole bundle', () => {
  it('package-binary refuses a missing CLI bundle, and one built beside another whole bundle', () => {
    expect(existsSync(BUNDLE)).toBe(true)
    const dir = tempDir('pind-pair-')
    const whole = join(dir, 'pind.cjs')
    copyFileSync(BUNDLE, whole)
    const missing = run('package-binary.mjs', [whole, join(dir, 'out')])
    expect(missing.status).toBe(1)
    expect(missing.err).toContain('CLI bundle not found')
    const cli = readFileSync(join(ROOT, 'dist', 'pind-cli.cjs'), 'utf8')
    writeFileSync(join(dir, 'pind-cli.cjs'), cli.replace(/^\/\/ pind whole bundle sha256 [0-9a-f]{64}/, `// pind whole bundle sha256 ${'0'.repeat(64)}`))
    const stale = run('package-binary.mjs', [whole, join(dir, 'out')])
    expect(stale.status).toBe(1)
    expect(stale.err).toContain('was not built with')
    expect(existsSync(join(dir, 'out'))).toBe(false)
  })

  it('package-binary refuses a bundle the entry cannot take as it is: not ASCII, or not wrapped as a function', () => {
    const dir = tempDir('pind-pair-')
    const whole = join(dir, 'pind.cjs')
    const cli = readFileSync(join(ROOT, 'dist', 'pind-cli.cjs'), 'utf8')
    const pair = (wholeText: string): void => {
      writeFileSync(whole, wholeText)
      const sha = createHash('sha256').update(readFileSync(whole)).digest('hex')
      writeFileSync(join(dir, 'pind-cli.cjs'), cli.replace(/^\/\/ pind whole bundle sha256 [0-9a-f]{64}/, `// pind whole bundle sha256 ${sha}`))
    }
    const text = readFileSync(BUNDLE, 'latin1')
    pair(`${text}\n// caf\u00e9\n`)
    const wide = run('package-binary.mjs', [whole, join(dir, 'out')])
    expect(wide.status).toBe(1)
    expect(wide.err).toContain('is not ASCII')
    pair(text.replace('(function (body) {', '(function (whole) {'))
    const bare = run('package-binary.mjs', [whole, join(dir, 'out')])
    expect(bare.status).toBe(1)
    expect(bare.err).toContain('is not wrapped as a function')
    expect(existsSync(join(dir, 'out'))).toBe(false)
  })

  it('bundle.mjs --cli needs the whole bundle beside its output', () => {
    const dir = tempDir('pind-pair-')
    const r = run('bundle.mjs', ['src/main.ts', join(dir, 'pind-cli.cjs'), '--cli'])
    expect(r.status).toBe(1)
    expect(r.err).toContain('build it first')
    expect(existsSync(join(dir, 'pind-cli.cjs'))).toBe(false)
  })
})
