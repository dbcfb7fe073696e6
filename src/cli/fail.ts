/**
 * How a subcommand fails: one line on stderr, `pind <command>: <what went
 * wrong>`, and an exit code (1, or 2 for a usage error found late). Errors
 * that carry a message meant for the operator print just that message;
 * anything else prints its name too.
 */
import { AdminCallError } from '../admin/client.js'
import { RefusedError } from '../kernel/errors.js'
import { EXIT_USAGE } from './config-from-cli.js'

/** A failure whose message is meant for the operator as it is. */
export class CliError extends Error {
  override name = 'CliError'
  constructor (message: string, readonly exitCode = 1) {
    super(message)
  }
}

export function fail (command: string, err: unknown): void {
  // not a failure: the command goes on in the whole program (main.ts)
  if (wholeProgramNeeded(err)) throw err
  const e = err as Error
  const message = err instanceof RefusedError ? err.message : err instanceof AdminCallError || err instanceof CliError ? e.message : `${e.name}: ${e.message}`
  process.stderr.write(`pind ${command}: ${message}\n`)
  process.exitCode = err instanceof CliError ? err.exitCode : 1
}

/**
 * The binary starts every command but serve's few heavy ones on a bundle of the CLI alone
 * (scripts/bundle.mjs --cli: a twentieth of the code to load). In that bundle each module the
 * CLI imports lazily (`await import(…)`: serve, the ledger, the block stores, libp2p's keys) is
 * one that throws this error when loaded, and main.ts hands the command to the whole program,
 * which runs it again from the start. A command therefore loads what it imports lazily before it
 * changes anything (takes a lock, writes a file or a line). Never thrown by the whole program.
 */
export function wholeProgramNeeded (err: unknown): boolean {
  return typeof err === 'object' && err != null && (err as Record<symbol, unknown>)[WHOLE_PROGRAM_NEEDED] === true
}

/** the mark of the errors above (scripts/bundle.mjs sets it on the errors its stand-ins throw) */
export const WHOLE_PROGRAM_NEEDED = Symbol.for('pind.wholeProgramNeeded')

/** A usage error found before any work: the message, and exit 2 at once. */
export function usage (command: string, message: string): never {
  process.stderr.write(`pind ${command}: ${message}\n`)
  process.exit(EXIT_USAGE)
}
