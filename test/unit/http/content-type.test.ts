/**
 * The type a gateway file is served with: a name (the path's, or
 * ?filename=) may name the type, but never turn active content (HTML, SVG,
 * XML, executables) into a type served inline.
 */
import { describe, expect, it } from 'vitest'
import { detectContentType, isPassiveType } from '../../../src/http/gateway/content-type.js'

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s)
const HTML = bytes('<html><body><script>alert(1)</script></body></html>')
const SVG = bytes('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
const PDF = bytes('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n')
const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0])

describe('detectContentType', () => {
  it('a passive name does not make active content passive', async () => {
    for (const name of ['a.pdf', 'a.txt', 'a.png', 'a.json', 'a.css', 'a.mp4']) {
      expect(isPassiveType(await detectContentType(name, HTML)), `HTML as ${name}`).toBe(false)
      expect(isPassiveType(await detectContentType(name, SVG)), `SVG as ${name}`).toBe(false)
    }
    expect(await detectContentType('a.pdf', HTML)).toBe('text/html; charset=utf-8')
  })

  it('a name still names the type of passive content, and of active content it makes more active', async () => {
    expect(await detectContentType('doc.pdf', PDF)).toBe('application/pdf')
    expect(await detectContentType('notes.txt', bytes('hello'))).toBe('text/plain; charset=utf-8')
    expect(await detectContentType('data.json', bytes('{"a":1}'))).toBe('application/json')
    expect(await detectContentType('style.css', bytes('body { color: red }'))).toBe('text/css; charset=utf-8')
    expect(await detectContentType('pic.jpg', PNG)).toBe('image/jpeg') // both passive: the name wins
    expect(await detectContentType('page.html', bytes('hello'))).toBe('text/html; charset=utf-8')
    expect(await detectContentType(undefined, PNG)).toBe('image/png')
  })
})
