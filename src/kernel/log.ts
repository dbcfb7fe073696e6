/**
 * Structured logging: one JSON object per line on stderr.
 * Quiet by default (level `warn`); request lines are logged at `info`.
 * `notice` lines (start and stop) are written at every level but `error`.
 * Every line written while a request is handled carries that request's id
 * and client address (`reqId`, `client`: see logContext), whoever logs it.
 * Callers pass plain fields; never pass secrets or tokens.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
export type LogLevel = 'error' | 'warn' | 'info' | 'debug'

export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug']
const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 }

export type LogFields = Record<string, unknown>

export interface Logger {
  error(msg: string, fields?: LogFields): void
  /** start, stop: shown unless the level is `error` */
  notice(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  debug(msg: string, fields?: LogFields): void
  enabled(level: LogLevel): boolean
  child(fields: LogFields): Logger
}

export interface LoggerOptions {
  level: LogLevel
  write?: (line: string) => void
  base?: LogFields
}

/** Fields added to every line logged within an async context (the HTTP server sets reqId and client per request). */
export const logContext = new AsyncLocalStorage<LogFields>()

export function createLogger (opts: LoggerOptions): Logger {
  const threshold = RANK[opts.level]
  const write = opts.write ?? ((line: string) => { process.stderr.write(line) })
  const base = opts.base ?? {}
  const emit = (level: LogLevel | 'notice', msg: string, fields?: LogFields): void => {
    if (RANK[level === 'notice' ? 'warn' : level] > threshold) return
    const record: LogFields = { time: new Date().toISOString(), level, msg, ...base, ...logContext.getStore(), ...fields }
    write(JSON.stringify(record, jsonSafe) + '\n')
  }
  return {
    error: (m, f) => { emit('error', m, f) },
    notice: (m, f) => { emit('notice', m, f) },
    warn: (m, f) => { emit('warn', m, f) },
    info: (m, f) => { emit('info', m, f) },
    debug: (m, f) => { emit('debug', m, f) },
    enabled: (level) => RANK[level] <= threshold,
    child: (fields) => createLogger({ ...opts, base: { ...base, ...fields } })
  }
}

function jsonSafe (_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString()
  if (value instanceof Error) return { name: value.name, message: value.message }
  return value
}

/** A logger that drops everything (for tests and library use). */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} })
