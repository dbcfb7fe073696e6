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

const RUNTIME_KEY = /^(GLIBC_TUNABLES|NODE_OPTIONS|MALLOC_.*|PIND_RUNTIME_.*)$/

/**
 * Splits the value of a systemd `Environment=` line (or a Dockerfile `ENV` line) into its
 * assignments: words separated by white space, each optionally in double or single quotes
 * (backslash escapes inside), anywhere in the word, as systemd.exec(5) reads
 * `Environment="K=V" "K2=V 2"` and `Environment=K=V K2=V2`, and docker `ENV K="a b"`.
 */
export function unitEnvironmentWords (value) {
  const words = []
  let i = 0
  while (i < value.length) {
    while (i < value.length && /\s/.test(value[i])) i++
    if (i >= value.length) break
    let word = ''
    while (i < value.length && !/\s/.test(value[i])) {
      const c = value[i]
      if (c === '"' || c === "'") {
        const end = value.indexOf(c, i + 1)
        if (end < 0) throw new Error(`unterminated quote in: ${value}`)
        i++
        while (i < end) {
          if (value[i] === '\\' && i + 1 < end) i++
          word += value[i++]
        }
        i++ // the closing quote
      } else if (c === '\\' && i + 1 < value.length) {
        word += value[i + 1]; i += 2
      } else {
        word += c; i++
      }
    }
    words.push(word)
  }
  return words
}

/** The KEY=value assignments of one such line, as an object (words without `=` left out). */
export function environmentAssignments (value) {
  const out = {}
  for (const w of unitEnvironmentWords(value)) {
    const at = w.indexOf('=')
    if (at > 0) out[w.slice(0, at)] = w.slice(at + 1)
  }
  return out
}

const only = (env) => Object.fromEntries(Object.entries(env).filter(([k]) => RUNTIME_KEY.test(k)))

/**
 * The runtime environment of a systemd unit (default scripts/pind.service): every `Environment=`
 * assignment (a later one of a key wins, an empty `Environment=` resets the list, as in systemd)
 * whose key is GLIBC_TUNABLES, NODE_OPTIONS, MALLOC_* or PIND_RUNTIME_*.
 */
export function unitRuntimeEnv (file = join(HERE, 'pind.service')) {
  let env = {}
  for (const raw of readFileSync(file, 'utf8').replace(/\\\r?\n/g, ' ').split(/\r?\n/)) {
    const line = raw.trim()
    if (line.startsWith('#') || line.startsWith(';')) continue
    const m = /^Environment\s*=(.*)$/.exec(line)
    if (m == null) continue
    const words = environmentAssignments(m[1])
    if (m[1].trim() === '') { env = {}; continue }
    Object.assign(env, words)
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
