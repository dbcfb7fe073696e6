/** Entry point of the `pind` binary. */
import './umask.js' // first: before any module can create a file
import { CommanderError } from 'commander'
import { buildProgram } from './cli/program.js'

buildProgram().parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) {
    // help and version exit 0; usage errors exit 2 (commander already printed the message)
    process.exit(err.exitCode === 0 ? 0 : 2)
  }
  process.stderr.write(`pind: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
