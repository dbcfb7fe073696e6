/**
 * Content-Type for deserialized files (by name, then by content), whether a
 * browser would execute it, and Content-Disposition.
 *
 * The content's own type: markup sniffing (HTML, SVG, XML: file-type calls an
 * SVG with an XML prolog "application/xml") → file-type on the first bytes →
 * UTF-8 text without control characters → text/plain →
 * application/octet-stream. The file name's extension (mime) names the type
 * instead, unless that would make active content look passive: a name (the
 * path's, or `?filename=` that anyone can add to a URL) never promotes
 * content to a type served inline — HTML bytes asked for as `a.pdf` are
 * still HTML, an attachment.
 */
import { fileTypeFromBuffer } from 'file-type'

/** how many leading bytes the sniffers look at (file-type's own figure) */
export const SNIFF_BYTES = 4100

export async function detectContentType (name: string | undefined, head: Uint8Array): Promise<string> {
  let byName: string | undefined
  if (name != null && name !== '') {
    // loaded at the first file served by name, not at start: building its ~1,000 types was
    // ~5 ms of every serve's start (docs/performance.md)
    const { default: mime } = await import('mime')
    const t = mime.getType(name)
    if (t != null && t !== 'application/octet-stream') byName = t
  }
  const sniffed = await sniffContent(head)
  const type = byName != null && (isPassiveType(sniffed) || !isPassiveType(byName)) ? byName : sniffed
  if (type.startsWith('text/') && !type.includes(';') && isUtf8Prefix(head)) return `${type}; charset=utf-8`
  return type
}

/** The type the first bytes say, whatever the name. */
async function sniffContent (head: Uint8Array): Promise<string> {
  let type = sniffMarkup(head)
  if (type == null) {
    try {
      type = (await fileTypeFromBuffer(head))?.mime
    } catch {
      type = undefined
    }
  }
  if (type == null && looksLikeText(head)) type = 'text/plain'
  return type ?? 'application/octet-stream'
}

const HTML_STARTS = [
  '<!doctype html', '<html', '<head', '<script', '<iframe', '<h1', '<div', '<font', '<table', '<a', '<style',
  '<title', '<b', '<body', '<br', '<p', '<!--'
]

/** WHATWG-style: skip BOM and whitespace, look at the first tag. */
export function sniffMarkup (head: Uint8Array): string | undefined {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(head.subarray(0, 1024)).replace(/^\uFEFF/, '').trimStart().toLowerCase()
  if (!text.startsWith('<')) return undefined
  if (text.startsWith('<?xml')) {
    return /<svg[\s>]/.test(text) ? 'image/svg+xml' : 'application/xml'
  }
  if (text.startsWith('<svg')) return 'image/svg+xml'
  for (const tag of HTML_STARTS) {
    if (text.startsWith(tag)) {
      const after = text.charAt(tag.length)
      if (tag === '<!--' || after === ' ' || after === '>' || after === '\t' || after === '\n' || after === '\r' || after === '/') {
        return 'text/html'
      }
    }
  }
  return undefined
}

/** valid UTF-8 (a character cut at the end is fine) and no control bytes but \t \n \f \r ESC */
export function looksLikeText (head: Uint8Array): boolean {
  if (!isUtf8Prefix(head)) return false
  for (const b of head) {
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d && b !== 0x1b) return false
    if (b === 0x7f) return false
  }
  return true
}

function isUtf8Prefix (head: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true })
    return true
  } catch {
    return false
  }
}

/**
 * Types a browser may render inline without running anything of the
 * content's own (an allow-list: everything else is "active" and goes out as
 * an attachment unless the operator allows active content).
 */
export function isPassiveType (contentType: string): boolean {
  const t = (contentType.split(';')[0] ?? '').trim().toLowerCase()
  if (t === 'image/svg+xml') return false
  if (t.startsWith('image/') || t.startsWith('audio/') || t.startsWith('video/') || t.startsWith('font/')) return true
  return PASSIVE.has(t)
}

const PASSIVE = new Set([
  'text/plain', 'text/css', 'text/csv', 'text/markdown', 'text/tab-separated-values', 'text/vtt',
  'application/json', 'application/cbor', 'application/octet-stream', 'application/pdf', 'application/wasm',
  'application/zip', 'application/gzip', 'application/x-tar', 'application/zstd', 'application/x-7z-compressed',
  'application/vnd.ipld.raw', 'application/vnd.ipld.car', 'application/vnd.ipld.dag-json', 'application/vnd.ipld.dag-cbor',
  'application/ogg', 'application/font-woff', 'application/x-font-ttf'
])

/**
 * Content-Disposition per the path gateway spec: `filename` and
 * `filename*=UTF-8''…` (RFC 8187) when a name is known; `attachment` when
 * asked (download=true) or forced (active content, binary formats).
 */
export function contentDisposition (attachment: boolean, filename: string | undefined): string | undefined {
  if (!attachment && filename == null) return undefined
  const kind = attachment ? 'attachment' : 'inline'
  if (filename == null) return kind
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_')
  if (ascii === filename) return `${kind}; filename="${ascii}"`
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeRfc8187(filename)}`
}

function encodeRfc8187 (s: string): string {
  return encodeURIComponent(s).replace(/['()*]/g, c => '%' + c.charCodeAt(0).toString(16).toUpperCase())
}
