/**
 * The program builds the command its arguments name, alone; everything when none is named or
 * the name is not a command. What commander then runs must be what it ran with every command
 * built: the same command, the same options, the same errors.
 */
import type { Command } from 'commander'
import { describe, expect, it } from 'vitest'
import { buildProgram, commandNamed } from '../../../src/cli/program.js'

const ALL = ['serve', 'gc', 'export-ledger', 'import-ledger', 'ledger', 'keys', 'settlements', 'pins', 'status', 'config', 'routing', 'deny', 'blocks']
const names = (p: Command): string[] => p.commands.map(c => c.name())
const globals = buildProgram([]).options

/** parses `args` with the program built for them, without running anything */
async function parsed (args: string[]): Promise<Parsed> {
  return await parsedWith(buildProgram(args), args)
}

describe('the command a command line names', () => {
  it('is the first argument that is neither a program option nor its value', () => {
    expect(commandNamed(['keys', 'mint', '--owner', '0x1'], globals)).toBe('keys')
    expect(commandNamed(['--data-dir', 'status', 'keys', 'mint'], globals)).toBe('keys') // a required value, even one spelled like a command
    expect(commandNamed(['--data-dir=/d', 'pins', 'ls'], globals)).toBe('pins')
    expect(commandNamed(['--config', 'c.json', '--log-level', 'debug', 'status'], globals)).toBe('status')
    // an optional value is taken unless it looks like an option
    expect(commandNamed(['--s3-force-path-style', 'false', 'status'], globals)).toBe('status')
    expect(commandNamed(['--s3-force-path-style', '--data-dir', 'd', 'gc'], globals)).toBe('gc')
  })

  it('is none when the arguments ask for help or the version, or name no command, or carry an unknown option', () => {
    for (const args of [[], ['--help'], ['-h'], ['-V'], ['--version'], ['help', 'keys'], ['kyes', 'mint'], ['--nope', 'keys'], ['--', 'keys'], ['-x', 'keys']]) {
      expect(commandNamed(args, globals), args.join(' ')).toBeUndefined()
    }
    // `--s3-force-path-style keys` gives the option the value "keys": what follows names no command
    expect(commandNamed(['--s3-force-path-style', 'keys', 'mint'], globals)).toBeUndefined()
  })
})

describe('the program built for a command line', () => {
  it('has that command alone, or every command', () => {
    expect(names(buildProgram(['keys', 'mint', '--owner', '0x1']))).toEqual(['keys'])
    expect(names(buildProgram(['--data-dir', 'd', 'serve']))).toEqual(['serve'])
    expect(names(buildProgram([]))).toEqual(ALL)
    expect(names(buildProgram(['--help']))).toEqual(ALL)
    expect(names(buildProgram(['kyes']))).toEqual(ALL)
  })

  it('runs what the whole program runs, with the same options and the same refusals', async () => {
    const lines = [
      ['keys', 'mint', '--owner', '0xab', '--json', '--data-dir', 'd'],
      ['--data-dir', 'status', 'keys', 'list'],
      ['--log-level', 'debug', 'pins', 'ls', '--json'],
      ['--s3-force-path-style', 'false', 'status'],
      ['--s3-force-path-style', 'keys', 'mint'],
      ['keys', 'mnt'],
      ['kyes', 'mint'],
      ['status', '--bogus']
    ]
    for (const args of lines) {
      const whole = buildProgram([])
      expect(names(whole)).toEqual(ALL)
      const alone = await parsed(args)
      const everything = await parsedWith(whole, args)
      expect(alone, args.join(' ')).toEqual(everything)
    }
  })
})

type Parsed = { path: string, opts: Record<string, unknown> } | { error: string }

/** parses `args` with `program`, its actions replaced: the command path and options the action got, or commander's error code */
async function parsedWith (program: Command, args: string[]): Promise<Parsed> {
  let got: { path: string, opts: Record<string, unknown> } | undefined
  const hook = (cmd: Command): void => {
    if (cmd.commands.length === 0) {
      cmd.action((...a: unknown[]) => {
        const c = a[a.length - 1] as Command
        const path: string[] = []
        for (let x: Command | null = c; x != null; x = x.parent) path.unshift(x.name())
        got = { path: path.join(' '), opts: c.optsWithGlobals() }
      })
    }
    for (const sub of cmd.commands) { sub.exitOverride(); sub.configureOutput({ writeErr: () => {}, writeOut: () => {} }); hook(sub) }
  }
  program.configureOutput({ writeErr: () => {}, writeOut: () => {} })
  hook(program)
  try {
    await program.parseAsync(args, { from: 'user' })
  } catch (err) {
    return { error: (err as { code?: string }).code ?? String(err) }
  }
  if (got == null) throw new Error('no action ran')
  return got
}
