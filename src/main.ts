/** Entry point of the `pind` binary. */
import './app/umask.js' // first: before any module can create a file
import { CommanderError } from 'commander'
import { wholeProgramNeeded } from './cli/fail.js'
import { buildProgram } from './cli/program.js'

// a reader that stops early (`pind --help | head`) ends the output, not in a crash on EPIPE
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0)
  throw err
})

buildProgram().parseAsync(process.argv).catch((err: unknown) => {
  // the binary's CLI bundle met a module only the whole program has: the command starts again
  // there, in this process (scripts/binary-entry.cjs keeps the loader of the whole program)
  const whole = (globalThis as Record<symbol, unknown>)[Symbol.for('pind.runWholeProgram')]
  if (wholeProgramNeeded(err) && typeof whole === 'function') {
    whole()
    return
  }
  if (err instanceof CommanderError) {
    // help and version exit 0; usage errors exit 2 (commander already printed the message)
    process.exit(err.exitCode === 0 ? 0 : 2)
  }
  process.stderr.write(`pind: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
