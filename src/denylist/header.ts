/**
 * The optional header of a .deny file: YAML before a `---` line, e.g. Bad
 * Bits':
 *
 *   version: 1
 *   name: Badbits (…)
 *   hints:
 *     gateway_status: 410
 *   ---
 *
 * pind reads the fields it uses — `version` (only 1 exists; another is
 * refused, as the spec asks) and the name, description and author it logs —
 * from top-level `key: value` lines, and the `hints` map for display. Other
 * fields and anything nested under them are ignored, as the spec asks of
 * unknown fields. This is not a YAML parser: a top-level line that is not
 * `key: value` (or a comment) makes the header invalid, and the list with it.
 */
import { PindError } from '../kernel/errors.js'
export interface DenylistHeader {
  version: number
  name?: string
  description?: string
  author?: string
  hints: Record<string, string>
}

export class HeaderError extends PindError {
  override name = 'HeaderError'
}

const TOP = /^([A-Za-z0-9_.-]+)\s*:(?:\s+(.*))?$/
const NESTED = /^\s+([A-Za-z0-9_.-]+)\s*:(?:\s+(.*))?$/

export function parseHeader (lines: readonly string[]): DenylistHeader {
  const h: DenylistHeader = { version: 1, hints: {} }
  let section: string | undefined
  lines.forEach((line, i) => {
    if (line.trim() === '' || line.trimStart().startsWith('#')) return
    if (/^\s/.test(line)) {
      if (section === 'hints') {
        const m = NESTED.exec(line)
        if (m != null) h.hints[m[1] as string] = scalar(m[2])
      }
      return // nested under a field pind does not use
    }
    const m = TOP.exec(line)
    if (m == null) throw new HeaderError(`header line ${i + 1} is not "key: value"`)
    const key = m[1] as string
    const value = scalar(m[2])
    section = key
    switch (key) {
      case 'version':
        if (!/^\d+$/.test(value) || Number(value) !== 1) throw new HeaderError(`denylist version ${value.slice(0, 20)} is not supported (pind reads version 1)`)
        break
      case 'name': h.name = value; break
      case 'description': h.description = value; break
      case 'author': h.author = value; break
    }
  })
  return h
}

/** a plain or quoted YAML scalar, a trailing comment removed */
function scalar (raw: string | undefined): string {
  const s = (raw ?? '').trim()
  const quoted = /^"((?:[^"\\]|\\.)*)"|^'((?:[^']|'')*)'/.exec(s)
  if (quoted != null) return quoted[1] != null ? quoted[1].replace(/\\(.)/g, '$1') : (quoted[2] as string).replace(/''/g, "'")
  return s.replace(/\s+#.*$/, '')
}
