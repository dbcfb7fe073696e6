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
  const e = err as Error
  const message = err instanceof RefusedError ? err.message : err instanceof AdminCallError || err instanceof CliError ? e.message : `${e.name}: ${e.message}`
  process.stderr.write(`pind ${command}: ${message}\n`)
  process.exitCode = err instanceof CliError ? err.exitCode : 1
}

/** A usage error found before any work: the message, and exit 2 at once. */
export function usage (command: string, message: string): never {
  process.stderr.write(`pind ${command}: ${message}\n`)
  process.exit(EXIT_USAGE)
}
