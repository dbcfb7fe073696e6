/**
 * HTTP Range (RFC 9110 §14) for byte responses.
 *
 * Multi-range choice: a Range header with more than one range is ignored and
 * the whole representation is sent with 200 (RFC 9110 §14.2 lets a server
 * ignore Range; the path gateway spec makes multi-range support optional).
 * This keeps one code path and no multipart/byteranges framing.
 *
 * Also ignored (→ 200): other units than `bytes`, syntactically invalid
 * headers, and an If-Range that does not match the current strong ETag.
 */

export type RangeDecision =
  | { kind: 'full' }
  | { kind: 'partial', start: number, end: number } // inclusive end
  | { kind: 'unsatisfiable' }

const SPEC = /^(\d*)-(\d*)$/

export function evaluateRange (header: string | undefined, size: number, ifRange?: string, etag?: string): RangeDecision {
  if (header == null) return { kind: 'full' }
  if (ifRange != null && ifRange.trim() !== etag) return { kind: 'full' }
  const eq = header.indexOf('=')
  if (eq < 0) return { kind: 'full' }
  if (header.slice(0, eq).trim().toLowerCase() !== 'bytes') return { kind: 'full' }
  const specs = header.slice(eq + 1).split(',').map(s => s.trim()).filter(s => s !== '')
  if (specs.length !== 1) return { kind: 'full' } // none, or multi-range: see header comment
  const m = SPEC.exec(specs[0] as string)
  if (m == null) return { kind: 'full' }
  const [, first = '', last = ''] = m
  if (first === '' && last === '') return { kind: 'full' }
  if (first === '') {
    // suffix: the last N bytes
    const n = Number(last)
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' }
    return { kind: 'partial', start: Math.max(0, size - n), end: size - 1 }
  }
  const start = Number(first)
  if (last !== '' && Number(last) < start) return { kind: 'full' } // invalid: ignore
  if (start >= size) return { kind: 'unsatisfiable' }
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1)
  return { kind: 'partial', start, end }
}
