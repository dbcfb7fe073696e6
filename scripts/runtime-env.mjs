/**
 * The production runtime environment (docs/runtime.md): what scripts/pind.service's
 * `Environment=` lines and scripts/Dockerfile's `ENV` set for the runtime (GLIBC_TUNABLES,
 * NODE_OPTIONS, PIND_RUNTIME_*), read from those files as systemd and docker read them. The soak
 * and the benchmarks start pind with it; a test keeps the two files equal.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = dirname(fileURLToPath(import.meta.url))

/**
 * The assignments of one `Environment=` value, as systemd reads them (systemd.exec(5)), or of a
 * Dockerfile `ENV` line: words separated by spaces, each `KEY=value`, where quotes ("…" or '…')
 * anywhere in a word hold spaces (`"KEY=a b"` and `KEY="a b"` alike).
 */
export function environmentAssignments (value) {
  const out = {}
  const words = []
  let word
  for (let i = 0; i < value.length; i++) {
    const c = value[i]
    if (c === ' ' || c === '\t') {
      if (word != null) words.push(word)
      word = undefined
    } else if (c === '"' || c === "'") {
      const end = value.indexOf(c, i + 1)
      if (end < 0) throw new Error(`unterminated quote in: ${value}`)
      word = (word ?? '') + value.slice(i + 1, end)
      i = end
    } else {
      word = (word ?? '') + c
    }
  }
  if (word != null) words.push(word)
  for (const w of words) {
    const at = w.indexOf('=')
    if (at > 0) out[w.slice(0, at)] = w.slice(at + 1)
  }
  return out
}

const isRuntime = (key) => key === 'GLIBC_TUNABLES' || key === 'NODE_OPTIONS' || key.startsWith('MALLOC_') || key.startsWith('PIND_RUNTIME_')
const only = (env) => Object.fromEntries(Object.entries(env).filter(([k]) => isRuntime(k)))

/** the runtime entries of a systemd unit's Environment= lines */
export function unitRuntimeEnv (file = join(HERE, 'pind.service')) {
  const env = {}
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^Environment=(.*)$/.exec(line.trim())
    if (m != null) Object.assign(env, environmentAssignments(m[1]))
  }
  return only(env)
}

/** the runtime entries of a Dockerfile's ENV instructions (continued lines joined) */
export function dockerfileRuntimeEnv (file = join(HERE, 'Dockerfile')) {
  const env = {}
  for (const line of readFileSync(file, 'utf8').replace(/\\\n/g, ' ').split('\n')) {
    const m = /^ENV\s+(.*)$/.exec(line.trim())
    if (m != null) Object.assign(env, environmentAssignments(m[1]))
  }
  return only(env)
}
